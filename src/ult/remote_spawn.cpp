// Spawning threads on any rank (run_spawned, start_local, spawn) and the
// per-destination batches that carry spawns and exit values out.
#include "remote.hpp"

#include <algorithm>
#include <cstring>

#include "record_pool.hpp"
#include "remote_internal.hpp"
#include "scheduler.hpp"
#include "worker.hpp"

namespace tsu::ult {

namespace {

std::size_t batch_max() {
  const std::size_t m = tsu_am_medium_max();
  return std::min<std::size_t>(m, 16 * 1024);
}

}  // namespace

// ---- Spawning ------------------------------------------------------------------------

void* Remote::run_spawned(void* a) {
  auto* info = static_cast<RemoteInfo*>(a);
  tsu_ult_remote_fn_t fn = info->fn_id <= TSU_ULT_FN_MAX
                               ? g_fns[info->fn_id].load(std::memory_order_acquire)
                               : nullptr;
  tsu_status_t st = TSU_OK;
  std::size_t vlen = 0;
  // The value is written here, not in info: info->value shares its bytes
  // with info->arg, which the function reads meanwhile.
  unsigned char value[TSU_ULT_VALUE_MAX];
  if (fn) {
    fn(info->arg, info->arg_len, value, &vlen);
    if (vlen > TSU_ULT_VALUE_MAX) {
      vlen = TSU_ULT_VALUE_MAX;
      st = TSU_ERR_TRUNCATED;
    }
  } else {
    st = TSU_ERR_INVALID_ARG;  // not registered here: the creator learns it at join
  }
  info->value_len = static_cast<uint16_t>(vlen);
  Remote* r = g_remote.load(std::memory_order_acquire);
  if (info->home || !r) {
    if (vlen) std::memcpy(info->value, value, vlen);  // the record is the handle
    if (Ult* self = current_ult()) self->error = st;
  } else if (!info->detached) {
    if (info->creator == r->rank_) {
      r->complete_proxy(info->token, st, value, vlen);  // came back home
    } else {
      // The last thread this worker has to run: its value leaves now, before
      // the worker goes back to its loop (one loop turn less on the remote
      // create+join path); with more to run it waits in the batch.
      Worker* w = current_worker();
      const bool last = !w || !w->has_runnable();
      r->queue_value(info->creator, info->token, st, value, vlen, last);
    }
  }
  return nullptr;
}

void Remote::start_local(RemoteInfo* info, bool home, const char* name, Ult** out) noexcept {
  // Threads run here for a handle elsewhere are detached here: the creator
  // holds the handle (a proxy).  Our own spawns keep the record as the handle.
  const bool ours = home;
  info->home = home;
  CreateArgs c;
  c.fn = &Remote::run_spawned;
  c.arg = info;
  c.detached = ours ? info->detached : true;
  c.remote = info;
  c.origin_rank = info->creator;
  c.stack_size = info->stack_size;  // (0: this rank's default)
  c.name = name;
  Ult* u = nullptr;
  if (create_thread(sched_, c, &u) != TSU_OK) {
    if (!ours && !info->detached) {
      if (info->creator == rank_) complete_proxy(info->token, TSU_ERR_NO_MEMORY, nullptr, 0);
      else queue_value(info->creator, info->token, TSU_ERR_NO_MEMORY, nullptr, 0);
    }
    util::RecordPool<RemoteInfo>::drop(info);
    return;
  }
  if (out) *out = u;
}

tsu_status_t Remote::spawn(tsu_ult_t* out, uint32_t rank, uint32_t fn_id, const void* arg,
                           std::size_t len, const CreateArgs& attr) {
  if (closed()) return TSU_ERR_NOT_INITIALIZED;  // tsu_finalize ran
  if (fn_id > TSU_ULT_FN_MAX || !g_fns[fn_id].load(std::memory_order_acquire))
    return TSU_ERR_INVALID_ARG;
  if (len > TSU_ULT_ARG_MAX || (len && !arg)) return TSU_ERR_INVALID_ARG;
  const bool detached = attr.detached;
  if (!out && !detached) return TSU_ERR_NULL_POINTER;
  // Only threads the program let the balancer place may move: a named rank
  // is where the thread's data is.
  const bool migratable = rank == TSU_ULT_ANY_RANK || attr.migratable;
  if (rank == TSU_ULT_ANY_RANK) rank = pick_any();
  if (rank >= size_) return TSU_ERR_BAD_RANK;
  if (lost_[rank].load(std::memory_order_acquire)) return TSU_ERR_PEER_LOST;
  auto* info = util::RecordPool<RemoteInfo>::make();
  if (!info) return TSU_ERR_NO_MEMORY;
  info->creator = rank_;
  info->runner.store(rank, std::memory_order_relaxed);
  info->fn_id = fn_id;
  info->stack_size = static_cast<uint32_t>(attr.stack_size);  // (read_attr: at most 1 GiB)
  info->detached = detached;
  info->migratable = migratable;
  info->arg_len = static_cast<uint16_t>(len);
  if (rank == rank_) {
    if (len) std::memcpy(info->arg, arg, len);
    Ult* u = nullptr;
    start_local(info, true, attr.name, &u);
    if (!u) return TSU_ERR_NO_MEMORY;
    if (out) *out = detached ? nullptr : reinterpret_cast<tsu_ult_t>(u);
    return TSU_OK;
  }
  // Another rank: a proxy record stands for the thread here.
  Worker* w = current_worker();
  const bool on_worker = w && &w->scheduler() == &sched_;
  Ult* proxy = nullptr;
  if (!detached) {
    proxy = sched_.new_record(on_worker ? w : nullptr);
    if (!proxy) {
      util::RecordPool<RemoteInfo>::drop(info);
      return TSU_ERR_NO_MEMORY;
    }
    proxy->proxy = true;
    proxy->remote = info;
    proxy->id = sched_.next_id(on_worker ? w : nullptr);
    proxy->origin_rank = rank_;
    proxy->state.store(State::kBlocked, std::memory_order_relaxed);
    {
      SpinGuard lock(proxies_lock_);
      info->token = proxies_.insert(proxy);
    }
    if (!info->token) {
      sched_.free_record(proxy);  // drops info
      return TSU_ERR_NO_MEMORY;
    }
    watch(rank);
    // Lost between the check above and the insert: on_peer_lost's scan of
    // the proxies may have missed ours (lost_ is set before that scan, which
    // takes proxies_lock_ as our insert did), so fail it here.
    if (lost_[rank].load(std::memory_order_acquire)) on_peer_lost(rank);
  }
  // Estimate: the target's queue grows by one until it tells us otherwise.
  load_[rank].fetch_add(1, std::memory_order_relaxed);
  // The argument goes from the caller's buffer to the batch: a proxy's record
  // never holds it (its buffer is for the value, which another pthread may
  // write as soon as the spawn has left).
  queue_spawn(rank, *info, arg, !on_worker);  // a pthread's spawn leaves at once
  if (detached) util::RecordPool<RemoteInfo>::drop(info);
  if (out) *out = reinterpret_cast<tsu_ult_t>(proxy);
  return TSU_OK;
}

// ---- Batches -----------------------------------------------------------------------

void Remote::append(Batch& b, std::deque<Chunk>& q, const void* head, std::size_t head_len,
                    const void* body, std::size_t body_len) noexcept {
  const std::size_t need = head_len + pad8(body_len);
  if (b.empty()) outgoing_.fetch_add(1, std::memory_order_release);
  if (q.empty() || q.back().data.size() + need > batch_max()) {
    q.emplace_back();
    if (!b.spare.empty()) {
      // A buffer that left before: its capacity is kept (no regrowth).
      q.back().data = std::move(b.spare.back());
      b.spare.pop_back();
    } else {
      // A few records' room at once (small enough for malloc's per-thread
      // cache), then the vector grows for large batches.
      q.back().data.reserve(std::min<std::size_t>(batch_max(), 512));
    }
  }
  Chunk& c = q.back();
  const std::size_t at = c.data.size();
  c.data.resize(at + need);
  std::memcpy(c.data.data() + at, head, head_len);
  if (body_len) std::memcpy(c.data.data() + at + head_len, body, body_len);
  ++c.count;
}

void Remote::queue_spawn(uint32_t dst, const RemoteInfo& info, const void* arg,
                         bool flush_now) noexcept {
  Batch& b = *out_[dst];
  std::lock_guard lock(b.mu);
  const SpawnRecord rec{info.token,   info.creator,      info.fn_id,
                        info.arg_len, spawn_flags(info), info.stack_size};
  append(b, b.spawns, &rec, sizeof rec, arg, info.arg_len);
  // A full chunk leaves at once; so does everything when asked to.
  if (flush_now || b.spawns.size() > 1) send_chunks(dst, b, true);
}

void Remote::queue_spawn(uint32_t dst, const SpawnRecord& rec, const void* arg) noexcept {
  Batch& b = *out_[dst];
  std::lock_guard lock(b.mu);
  append(b, b.spawns, &rec, sizeof rec, arg, rec.arg_len);
  if (b.spawns.size() > 1) send_chunks(dst, b, true);
}

void Remote::queue_value(uint32_t dst, uint64_t token, tsu_status_t st, const void* v,
                         std::size_t len, bool flush_now, uint16_t flags) noexcept {
  Batch& b = *out_[dst];
  std::lock_guard lock(b.mu);
  const ValueRecord rec{token, st, static_cast<uint16_t>(len), flags};
  append(b, b.values, &rec, sizeof rec, v, len);
  if (flush_now || b.values.size() > 1) send_chunks(dst, b, false);
}

bool Remote::send_chunks(uint32_t dst, Batch& b, bool spawns) noexcept {
  // (Also from a ULT's end, outside the workers' passes.)  Closed: nothing
  // leaves any more; the chunks go with the layer.
  Gate gate(*this);
  if (!gate) return false;
  std::deque<Chunk>& q = spawns ? b.spawns : b.values;
  const bool had = !b.empty();
  bool all = true;
  while (!q.empty()) {
    Chunk& c = q.front();
    const uint64_t args[2] = {c.count, runnable()};
    const tsu_status_t st = tsu_try_am_medium(dst, spawns ? kAmSpawn : kAmValues, args, 2,
                                              c.data.data(), c.data.size(), tsu_cb_none());
    if (st == TSU_EAGAIN) {
      all = false;
      break;
    }
    if (st == TSU_OK) {
      count_sent(dst);
      if (Worker* w = current_worker()) w->note_sent();
    } else {
      // The rank is gone (or unreachable): joiners get the error now; exit
      // values for it have nobody to go to.
      if (spawns) fail_chunk(dst, c, st == TSU_ERR_PEER_LOST ? st : TSU_ERR_UNREACHABLE);
      if (st == TSU_ERR_PEER_LOST) lost_[dst].store(true, std::memory_order_release);
    }
    if (b.spare.size() < kSpareChunks) {
      c.data.clear();
      b.spare.push_back(std::move(c.data));
    }
    q.pop_front();
  }
  if (had && b.empty()) outgoing_.fetch_sub(1, std::memory_order_release);
  return all;
}

void Remote::fail_chunk(uint32_t dst, const Chunk& c, tsu_status_t st) noexcept {
  std::size_t off = 0;
  while (off + sizeof(SpawnRecord) <= c.data.size()) {
    SpawnRecord rec;
    std::memcpy(&rec, c.data.data() + off, sizeof rec);
    off += sizeof rec + pad8(rec.arg_len);
    if (!rec.token || (rec.flags & kSpawnDetached)) continue;  // detached: nobody waits
    if (rec.creator == rank_) {
      complete_proxy(rec.token, st, nullptr, 0);
    } else if (rec.creator != dst && rec.creator < size_) {
      // A thread we were handing on for a creator elsewhere (give_work): its
      // creator learns the error from us, by a value record (it may not
      // know of the move yet, and if the thief is only unreachable from
      // here, nothing else would ever end its join).  Queued by flush():
      // we hold dst's batch lock here, and lock order between two batches
      // is not fixed.
      try {
        std::lock_guard lock(orphans_mu_);
        orphans_.push_back(Orphan{rec.token, rec.creator, st});
        has_orphans_.store(true, std::memory_order_release);
      } catch (...) {
        // Out of memory: the creator's watch on the thief is left to end it
        // (a loss; an unreachable thief then never ends it).
      }
    }
  }
}

void Remote::fail_spawns(uint32_t dst, Batch& b, tsu_status_t st) noexcept {
  const bool had = !b.empty();
  while (!b.spawns.empty()) {
    fail_chunk(dst, b.spawns.front(), st);
    b.spawns.pop_front();
  }
  if (st == TSU_ERR_PEER_LOST) lost_[dst].store(true, std::memory_order_release);
  if (had && b.empty()) outgoing_.fetch_sub(1, std::memory_order_release);
}

bool Remote::flush() noexcept {
  if (has_orphans_.load(std::memory_order_acquire)) {
    std::vector<Orphan> v;
    {
      std::lock_guard lock(orphans_mu_);
      v.swap(orphans_);
      has_orphans_.store(false, std::memory_order_relaxed);
    }
    for (const Orphan& o : v) queue_value(o.creator, o.token, o.status, nullptr, 0);
  }
  if (!has_outgoing()) return true;
  bool all = true;
  for (uint32_t d = 0; d < size_; ++d) {
    Batch& b = *out_[d];
    std::unique_lock lock(b.mu, std::try_to_lock);
    if (!lock.owns_lock()) {
      all = false;  // someone is sending it right now
      continue;
    }
    if (b.empty()) continue;
    all &= send_chunks(d, b, true);
    all &= send_chunks(d, b, false);
  }
  return all;
}
}  // namespace tsu::ult
