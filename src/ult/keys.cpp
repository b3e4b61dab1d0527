#include "keys.hpp"

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "tsunagi/ult.h"

namespace tsu::ult {

namespace {
// A key number is reused after delete; its generation is not: each slot
// counts its creations, and a value is stored with the generation of the key
// it was set for.  A value set before a delete is invisible to a key created
// later with the same number (its generation differs), as with pthreads.
struct KeySlot {
  std::atomic<bool> used{false};
  std::atomic<uint64_t> generation{0};  // bumped by create (and delete)
  std::atomic<void (*)(void*)> destructor{nullptr};
};
KeySlot g_keys[TSU_ULT_KEYS_MAX];
std::mutex g_keys_mu;  // serializes create/delete
thread_local KeyValue t_pthread_values[TSU_ULT_KEYS_MAX];
constexpr int kDestructorRounds = 4;

KeyValue* values_of(Ult* u, bool create) noexcept {
  if (!u) return t_pthread_values;
  if (!u->keys && create)
    u->keys = static_cast<KeyValue*>(std::calloc(TSU_ULT_KEYS_MAX, sizeof(KeyValue)));
  return u->keys;
}
}  // namespace

void run_key_destructors(Ult* u) noexcept {
  for (int round = 0; round < kDestructorRounds && u->keys; ++round) {
    bool any = false;
    for (uint32_t k = 0; k < TSU_ULT_KEYS_MAX; ++k) {
      void* v = u->keys[k].value;
      if (!v) continue;
      const uint64_t gen = u->keys[k].generation;
      u->keys[k] = KeyValue{};
      if (gen != g_keys[k].generation.load(std::memory_order_acquire)) continue;  // deleted key
      auto* d = g_keys[k].destructor.load(std::memory_order_acquire);
      if (d && g_keys[k].used.load(std::memory_order_acquire)) {
        d(v);
        any = true;
      }
    }
    if (!any) break;
  }
}

void free_key_values(Ult* u) noexcept {
  std::free(u->keys);
  u->keys = nullptr;
}

}  // namespace tsu::ult

using namespace tsu::ult;

extern "C" {

tsu_status_t tsu_ult_key_create(tsu_ult_key_t* key, void (*destructor)(void*)) {
  if (!key) return TSU_ERR_NULL_POINTER;
  std::lock_guard lock(g_keys_mu);
  for (uint32_t k = 0; k < TSU_ULT_KEYS_MAX; ++k) {
    if (!g_keys[k].used.load(std::memory_order_relaxed)) {
      g_keys[k].destructor.store(destructor, std::memory_order_relaxed);
      g_keys[k].generation.fetch_add(1, std::memory_order_relaxed);
      g_keys[k].used.store(true, std::memory_order_release);
      *key = k;
      return TSU_OK;
    }
  }
  return TSU_ERR_LIMIT;
}

tsu_status_t tsu_ult_key_delete(tsu_ult_key_t key) {
  if (key >= TSU_ULT_KEYS_MAX) return TSU_ERR_INVALID_ARG;
  std::lock_guard lock(g_keys_mu);
  if (!g_keys[key].used.load(std::memory_order_relaxed)) return TSU_ERR_INVALID_ARG;
  g_keys[key].used.store(false, std::memory_order_release);
  g_keys[key].generation.fetch_add(1, std::memory_order_release);
  g_keys[key].destructor.store(nullptr, std::memory_order_relaxed);
  return TSU_OK;
}

tsu_status_t tsu_ult_setspecific(tsu_ult_key_t key, const void* value) {
  if (key >= TSU_ULT_KEYS_MAX || !g_keys[key].used.load(std::memory_order_acquire))
    return TSU_ERR_INVALID_ARG;
  KeyValue* values = values_of(current_ult(), value != nullptr);
  if (!values) return value ? TSU_ERR_NO_MEMORY : TSU_OK;
  values[key].value = const_cast<void*>(value);
  values[key].generation = g_keys[key].generation.load(std::memory_order_acquire);
  return TSU_OK;
}

void* tsu_ult_getspecific(tsu_ult_key_t key) {
  if (key >= TSU_ULT_KEYS_MAX) return nullptr;
  const KeyValue* values = values_of(current_ult(), false);
  if (!values || !values[key].value) return nullptr;
  // A value set for a deleted key (this number's earlier life) reads as unset.
  if (values[key].generation != g_keys[key].generation.load(std::memory_order_acquire))
    return nullptr;
  return values[key].value;
}

}  // extern "C"
