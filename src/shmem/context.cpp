// Contexts (shmem_ctx_*), their quiet and fence, and the bounce buffers that
// carry local sides outside any segment.
#include "context.hpp"
#include "state.hpp"

#include <atomic>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace tsu::shmem {
namespace {

Context g_default;

constexpr uint32_t kBounceCount = 64;  // 4 MiB of segment per PE

struct BouncePool {
  std::mutex mutex;
  std::vector<uint32_t> free;
};
BouncePool g_bounce;

void on_bounce_done(tsu_status_t status, void* arg) {
  auto* req = static_cast<BounceRequest*>(arg);
  if (status == TSU_OK && req->copy_to)
    std::memcpy(req->copy_to, state().bounce_base + size_t{req->bounce} * kBounceBytes,
                req->bytes);
  bounce_give(req->bounce);
  const tsu_cb_t count = tsu_counter_cb(&req->ctx->done);
  delete req;
  count.fn(status, count.arg);
}

// Waits for every request of `c` counted so far; ends the job on a failure.
void wait_all(Context* c, const char* fn) {
  const uint64_t target = c->issued.load(std::memory_order_acquire);
  if (tsu_counter_value(&c->done) < target) {
    const tsu_status_t st = wait_counter(&c->done, target);
    if (st != TSU_OK)
      fail(fn, "a request of this context failed: %s (%s)", tsu_strerror(st), tsu_last_error());
  } else if (c->done.first_error != TSU_OK) {
    const auto st = static_cast<tsu_status_t>(c->done.first_error);
    fail(fn, "a request of this context failed: %s", tsu_strerror(st));
  }
  unsigned spins = 0;
  while (c->am_pending.load(std::memory_order_acquire) != 0) wait_pause(&spins);
}

}  // namespace

int Context::world_pe(int pe, const char* fn) noexcept {
  if (!team) {
    check_pe(pe, fn);
    return pe;
  }
  const int world = team_world_pe(team, pe);
  if (world < 0) fail(fn, "PE %d is not a member of the context's team", pe);
  return world;
}

void contexts_init(const char* fn) noexcept {
  State& s = state();
  tsu_counter_init(&g_default.done);
  g_default.issued.store(0);
  g_default.am_pending.store(0);
  g_default.live = true;
  void* base = nullptr;
  check_tsu(tsu_segment_alloc(kBounceBytes * kBounceCount, &s.bounce_seg, &base), fn,
            "allocating bounce buffers");
  s.bounce_base = static_cast<char*>(base);
  std::lock_guard lock(g_bounce.mutex);
  g_bounce.free.clear();
  for (uint32_t i = kBounceCount; i-- > 0;) g_bounce.free.push_back(i);
}

void contexts_finalize() noexcept {
  State& s = state();
  if (s.bounce_base) tsu_segment_free(s.bounce_seg);
  s.bounce_base = nullptr;
}

Bounce bounce_take() noexcept {
  unsigned spins = 0;
  for (;;) {
    {
      std::lock_guard lock(g_bounce.mutex);
      if (!g_bounce.free.empty()) {
        const uint32_t i = g_bounce.free.back();
        g_bounce.free.pop_back();
        const uint64_t off = uint64_t{i} * kBounceBytes;
        return Bounce{state().bounce_base + off, tsu_laddr(state().bounce_seg, off), i};
      }
    }
    wait_pause(&spins);
  }
}

void bounce_give(uint32_t index) noexcept {
  std::lock_guard lock(g_bounce.mutex);
  g_bounce.free.push_back(index);
}

tsu_cb_t bounce_callback(Context* c, uint32_t bounce, void* copy_to, size_t bytes) noexcept {
  auto* req = new (std::nothrow) BounceRequest{c, bounce, copy_to, bytes};
  if (!req) fail("shmem", "out of memory for a request record");
  c->issued.fetch_add(1, std::memory_order_relaxed);
  return tsu_cb(on_bounce_done, req);
}

Context* default_context() noexcept { return &g_default; }

Context* context(shmem_ctx_t ctx, const char* fn) noexcept {
  if (ctx == SHMEM_CTX_DEFAULT) return &g_default;
  if (ctx == SHMEM_CTX_INVALID) fail(fn, "the context is SHMEM_CTX_INVALID");
  auto* c = reinterpret_cast<Context*>(ctx);
  if (debug_checks() && !c->live) fail(fn, "the context was destroyed");
  return c;
}

void quiet(Context* c, const char* fn) noexcept {
  wait_all(c, fn);
  // Stores made through direct pointers before the quiet are visible before
  // any made after it (ThreadSanitizer does not model fences; the counter
  // wait above is its synchronization).
#if !defined(__SANITIZE_THREAD__)
  std::atomic_thread_fence(std::memory_order_seq_cst);
#endif
}

// Ordering of puts to each PE: completing them all is the simplest order
// that holds on every route (stores through direct pointers are in order
// already; requests to tsunagi complete before any later one starts).
void fence(Context* c, const char* fn) noexcept { quiet(c, fn); }

}  // namespace tsu::shmem

using namespace tsu::shmem;

extern "C" {

shmem_ctx_t const SHMEM_CTX_DEFAULT = reinterpret_cast<shmem_ctx_t>(&g_default);

int shmem_ctx_create(long options, shmem_ctx_t* ctx) {
  check_init("shmem_ctx_create");
  if (!ctx) fail("shmem_ctx_create", "ctx is NULL");
  if (options & ~(SHMEM_CTX_SERIALIZED | SHMEM_CTX_PRIVATE | SHMEM_CTX_NOSTORE))
    fail("shmem_ctx_create", "unknown option bits 0x%lx", options);
  auto* c = new (std::nothrow) Context;
  if (!c) {
    *ctx = SHMEM_CTX_INVALID;
    return 1;
  }
  tsu_counter_init(&c->done);
  c->options = options;
  *ctx = reinterpret_cast<shmem_ctx_t>(c);
  return 0;
}

int shmem_team_create_ctx(shmem_team_t team_handle, long options, shmem_ctx_t* ctx) {
  check_init("shmem_team_create_ctx");
  if (!ctx) fail("shmem_team_create_ctx", "ctx is NULL");
  if (team_handle == SHMEM_TEAM_INVALID) {
    *ctx = SHMEM_CTX_INVALID;
    return 1;
  }
  Team* t = team(team_handle, "shmem_team_create_ctx");
  const int rc = shmem_ctx_create(options, ctx);
  if (rc == 0 && team_handle != SHMEM_TEAM_WORLD) reinterpret_cast<Context*>(*ctx)->team = t;
  return rc;
}

void shmem_ctx_destroy(shmem_ctx_t ctx) {
  check_init("shmem_ctx_destroy");
  if (ctx == SHMEM_CTX_INVALID) return;
  if (ctx == SHMEM_CTX_DEFAULT) fail("shmem_ctx_destroy", "the default context cannot be destroyed");
  Context* c = context(ctx, "shmem_ctx_destroy");
  quiet(c, "shmem_ctx_destroy");  // destroying a context completes its requests
  c->live = false;
  if (!debug_checks()) delete c;  // kept under SHMEM_DEBUG to catch a later use
}

int shmem_ctx_get_team(shmem_ctx_t ctx, shmem_team_t* team_out) {
  check_init("shmem_ctx_get_team");
  if (!team_out) fail("shmem_ctx_get_team", "team is NULL");
  if (ctx == SHMEM_CTX_INVALID) {
    *team_out = SHMEM_TEAM_INVALID;
    return -1;
  }
  Context* c = context(ctx, "shmem_ctx_get_team");
  *team_out = c->team ? team_handle_of(c->team) : SHMEM_TEAM_WORLD;
  return 0;
}

void shmem_fence(void) {
  check_init("shmem_fence");
  fence(default_context(), "shmem_fence");
}
void shmem_ctx_fence(shmem_ctx_t ctx) {
  check_init("shmem_ctx_fence");
  fence(context(ctx, "shmem_ctx_fence"), "shmem_ctx_fence");
}
void shmem_quiet(void) {
  check_init("shmem_quiet");
  quiet(default_context(), "shmem_quiet");
}
void shmem_ctx_quiet(shmem_ctx_t ctx) {
  check_init("shmem_ctx_quiet");
  quiet(context(ctx, "shmem_ctx_quiet"), "shmem_ctx_quiet");
}

}  // extern "C"
