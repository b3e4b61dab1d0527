// Atomics.  One executor per word (seed 002): every atomic on a symmetric
// word is a CPU atomic on the owner's memory, whoever issues it.
//  - a word mapped here (ours, a node peer's heap): the CPU atomic, here;
//  - a heap word elsewhere: tsunagi's atomic, which the owner's CPU runs
//    (the heap is an allocated segment, whose atomic site is the CPU);
//  - a peer's static word (registered memory, which tsunagi's atomics do not
//    take): an active message whose handler runs the CPU atomic at the owner.
#include "context.hpp"
#include "state.hpp"

#include <tsunagi/am.h>

#include <cstring>
#include <new>

namespace tsu::shmem {
namespace {

size_t word_bytes(Word w) {
  return (w == Word::kI32 || w == Word::kU32 || w == Word::kF32) ? 4 : 8;
}

template <typename T>
uint64_t cpu_atomic_t(T* p, Amo op, uint64_t operand_bits, uint64_t compare_bits) {
  T v, cmp;
  std::memcpy(&v, &operand_bits, sizeof v);
  std::memcpy(&cmp, &compare_bits, sizeof cmp);
  T old = 0;
  constexpr int kOrder = __ATOMIC_SEQ_CST;
  switch (op) {
    case Amo::kFetch: old = __atomic_load_n(p, kOrder); break;
    case Amo::kSet: __atomic_store_n(p, v, kOrder); break;
    case Amo::kCompareSwap:
      old = cmp;
      __atomic_compare_exchange_n(p, &old, v, false, kOrder, kOrder);
      break;
    case Amo::kSwap: old = __atomic_exchange_n(p, v, kOrder); break;
    case Amo::kFetchInc: old = __atomic_fetch_add(p, T{1}, kOrder); break;
    case Amo::kInc: __atomic_fetch_add(p, T{1}, kOrder); break;
    case Amo::kFetchAdd: old = __atomic_fetch_add(p, v, kOrder); break;
    case Amo::kAdd: __atomic_fetch_add(p, v, kOrder); break;
    case Amo::kFetchAnd: old = __atomic_fetch_and(p, v, kOrder); break;
    case Amo::kAnd: __atomic_fetch_and(p, v, kOrder); break;
    case Amo::kFetchOr: old = __atomic_fetch_or(p, v, kOrder); break;
    case Amo::kOr: __atomic_fetch_or(p, v, kOrder); break;
    case Amo::kFetchXor: old = __atomic_fetch_xor(p, v, kOrder); break;
    case Amo::kXor: __atomic_fetch_xor(p, v, kOrder); break;
  }
  uint64_t bits = 0;
  std::memcpy(&bits, &old, sizeof old);
  return bits;
}

// Floating words take fetch, set, swap and compare-swap as bit patterns.
uint64_t cpu_atomic(void* p, Amo op, Word w, uint64_t operand, uint64_t compare) {
  switch (w) {
    case Word::kI32: return cpu_atomic_t(static_cast<int32_t*>(p), op, operand, compare);
    case Word::kU32:
    case Word::kF32: return cpu_atomic_t(static_cast<uint32_t*>(p), op, operand, compare);
    case Word::kI64: return cpu_atomic_t(static_cast<int64_t*>(p), op, operand, compare);
    case Word::kU64:
    case Word::kF64: break;
  }
  return cpu_atomic_t(static_cast<uint64_t*>(p), op, operand, compare);
}

bool fetches(Amo op) {
  switch (op) {
    case Amo::kSet: case Amo::kInc: case Amo::kAdd: case Amo::kAnd: case Amo::kOr: case Amo::kXor:
      return false;
    default: return true;
  }
}

// ---- The active-message route for peers' static words ----------------------
// A request in flight: the reply handler fills it in.
struct AmoRecord {
  std::atomic<int> done{0};
  // Set (release) once the fields below are filled in; the reply handler
  // reads it (acquire) first.  The request and its reply travel through the
  // peer, an ordering ThreadSanitizer cannot see; this one it can.
  std::atomic<int> published{0};
  uint64_t result = 0;
  void* result_ptr = nullptr;  // nbi: where the old value goes
  size_t result_bytes = 0;
  Context* ctx = nullptr;      // set: nobody waits, the reply frees the record
};

void on_request(tsu_am_token_t* token, const uint64_t* args, uint32_t, void*, size_t, void*) {
  const uint64_t off = args[0] & ((uint64_t{1} << 48) - 1);
  const auto op = static_cast<Amo>((args[0] >> 48) & 0xff);
  const auto w = static_cast<Word>(args[0] >> 56);
  const State& s = state();
  uint64_t old = 0;
  // The sender checked the range against its own copy of the same program.
  if (off + word_bytes(w) <= s.static_size) old = cpu_atomic(s.static_base + off, op, w, args[1], args[2]);
  const uint64_t reply[2] = {args[3], old};
  tsu_am_reply(token, kAmAtomicReply, reply, 2, nullptr, 0);
}

void on_reply(tsu_am_token_t*, const uint64_t* args, uint32_t, void*, size_t, void*) {
  auto* rec = reinterpret_cast<AmoRecord*>(static_cast<uintptr_t>(args[0]));
  (void)rec->published.load(std::memory_order_acquire);
  if (Context* c = rec->ctx) {
    if (rec->result_ptr) std::memcpy(rec->result_ptr, &args[1], rec->result_bytes);
    delete rec;
    c->am_pending.fetch_sub(1, std::memory_order_release);
    return;
  }
  rec->result = args[1];
  rec->done.store(1, std::memory_order_release);
}

void atomic_by_message(Context* c, const void* dest, Amo op, Word w, uint64_t operand,
                       uint64_t compare, void* result, int pe, bool wait, const char* fn) {
  const State& s = state();
  const uint64_t off = static_cast<uint64_t>(static_cast<const char*>(dest) - s.static_base);
  AmoRecord local;
  AmoRecord* rec = &local;
  if (!wait) {
    rec = new (std::nothrow) AmoRecord;
    if (!rec) fail(fn, "out of memory for a request record");
    rec->ctx = c;
    rec->result_ptr = result;
    rec->result_bytes = word_bytes(w);
    c->am_pending.fetch_add(1, std::memory_order_relaxed);
  }
  rec->published.store(1, std::memory_order_release);
  const uint64_t args[4] = {off | (uint64_t(op) << 48) | (uint64_t(w) << 56), operand, compare,
                            reinterpret_cast<uintptr_t>(rec)};
  const tsu_status_t st = issue_retrying([&] {
    return tsu_try_am_short(static_cast<uint32_t>(pe), kAmAtomicRequest, args, 4, tsu_cb_none());
  });
  if (st != TSU_OK)
    fail(fn, "an atomic on PE %d failed: %s (%s)", pe, tsu_strerror(st), tsu_last_error());
  if (!wait) return;
  unsigned spins = 0;
  while (!rec->done.load(std::memory_order_acquire)) wait_pause(&spins);
  if (result) std::memcpy(result, &rec->result, word_bytes(w));
}

// ---- tsunagi's atomics for heap words elsewhere ------------------------------
tsu_atype_t tsu_type(Word w) {
  switch (w) {
    case Word::kI32: return TSU_TYPE_INT32;
    case Word::kU32: case Word::kF32: return TSU_TYPE_UINT32;
    case Word::kI64: return TSU_TYPE_INT64;
    case Word::kU64: case Word::kF64: break;
  }
  return TSU_TYPE_UINT64;
}

tsu_aop_t tsu_op(Amo op) {
  switch (op) {
    case Amo::kFetch: return TSU_AOP_LOAD;
    case Amo::kSet: return TSU_AOP_STORE;
    case Amo::kCompareSwap: return TSU_AOP_CAS;
    case Amo::kSwap: return TSU_AOP_SWAP;
    case Amo::kFetchInc: case Amo::kFetchAdd: return TSU_AOP_FETCH_ADD;
    case Amo::kInc: case Amo::kAdd: return TSU_AOP_ADD;
    case Amo::kFetchAnd: return TSU_AOP_FETCH_AND;
    case Amo::kAnd: return TSU_AOP_AND;
    case Amo::kFetchOr: return TSU_AOP_FETCH_OR;
    case Amo::kOr: return TSU_AOP_OR;
    case Amo::kFetchXor: return TSU_AOP_FETCH_XOR;
    case Amo::kXor: break;
  }
  return TSU_AOP_XOR;
}

}  // namespace

void atomics_init(const char* fn) noexcept {
  check_tsu(tsu_am_register(kAmAtomicRequest, on_request, nullptr), fn,
            "registering the atomics handler");
  check_tsu(tsu_am_register(kAmAtomicReply, on_reply, nullptr), fn,
            "registering the atomics handler");
}

void atomic(Context* c, void* dest, Amo op, Word w, const void* operand, const void* compare,
            void* result, int pe, bool nbi, const char* fn) noexcept {
  pe = c->world_pe(pe, fn);
  const size_t bytes = word_bytes(w);
  if (__builtin_expect(reinterpret_cast<uintptr_t>(dest) % bytes != 0, 0))
    fail(fn, "the word %p is not %zu-byte aligned", dest, bytes);
  if (op == Amo::kFetchInc || op == Amo::kInc) {
    static const uint64_t one = 1;
    operand = &one;  // 1 in either width (little-endian)
  }
  uint64_t operand_bits = 0, compare_bits = 0;
  if (operand) std::memcpy(&operand_bits, operand, bytes);
  if (compare) std::memcpy(&compare_bits, compare, bytes);
  if (fetches(op) && !result) fail(fn, "the result pointer is NULL");

  const bool heap = in_heap(dest, bytes);
  if (!heap && !in_static(dest, bytes)) to_gaddr(dest, bytes, pe, fn);  // fails, naming it
  if (void* p = direct_ptr(dest, pe)) {
    const uint64_t old = cpu_atomic(p, op, w, operand_bits, compare_bits);
    if (fetches(op)) std::memcpy(result, &old, bytes);
    return;
  }
  if (!heap) {
    atomic_by_message(c, dest, op, w, operand_bits, compare_bits, result, pe,
                      fetches(op) && !nbi, fn);
    return;
  }
  const tsu_gaddr_t g = to_gaddr(dest, bytes, pe, fn);
  const tsu_atype_t type = tsu_type(w);
  const tsu_aop_t aop = tsu_op(op);
  const void* cmp = op == Amo::kCompareSwap ? &compare_bits : nullptr;
  if (fetches(op) && !nbi) {
    uint64_t old = 0;
    tsu_counter_t one;
    tsu_counter_init(&one);
    tsu_status_t st = issue_retrying([&] {
      return tsu_try_atomic(g, aop, type, &operand_bits, cmp, &old, tsu_counter_cb(&one));
    });
    if (st == TSU_OK) st = wait_counter(&one, 1);
    if (st != TSU_OK)
      fail(fn, "an atomic on PE %d failed: %s (%s)", pe, tsu_strerror(st), tsu_last_error());
    std::memcpy(result, &old, bytes);
    return;
  }
  // Non-fetching atomics complete at the quiet, as do the nbi forms (their
  // result is written by then).
  const tsu_cb_t cb = c->count_one();
  const tsu_status_t st = issue_retrying([&] {
    return tsu_try_atomic(g, aop, type, &operand_bits, cmp, fetches(op) ? result : nullptr, cb);
  });
  if (st != TSU_OK)
    fail(fn, "an atomic on PE %d failed: %s (%s)", pe, tsu_strerror(st), tsu_last_error());
}

}  // namespace tsu::shmem
