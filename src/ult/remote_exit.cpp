// The layer's end: closing at tsu_finalize (joins of threads elsewhere end)
// and the termination count among the surviving ranks at finish.
#include "remote.hpp"

#include <sched.h>
#include <time.h>

#include "remote_internal.hpp"
#include "scheduler.hpp"

namespace tsu::ult {

void Remote::on_tsunagi_finalize(void* remote) noexcept { static_cast<Remote*>(remote)->close(); }

void Remote::close() noexcept {
  closed_.store(true, std::memory_order_seq_cst);
  while (in_calls_.load(std::memory_order_seq_cst) != 0) sched_yield();
  // No value can come any more: end the joins of threads elsewhere.
  std::vector<uint64_t> tokens;
  {
    SpinGuard lock(proxies_lock_);
    proxies_.for_each([&](uint64_t t, Ult*) { tokens.push_back(t); });
  }
  for (uint64_t t : tokens) complete_proxy(t, TSU_ERR_NOT_INITIALIZED, nullptr, 0);
}
// ---- Termination ---------------------------------------------------------------------
//
// Counting termination among the surviving ranks, by point-to-point
// messages (a collective over the world fails once a rank is lost, and a
// rank that left early would strand the others' spawns to it).  Round k:
// each rank, once it runs nothing and has nothing left to send, sends every
// rank it believes alive its report: messages of the layer sent to and
// handled from each rank.  With the reports of round k from every survivor
// (a lost rank is waited for no longer), a rank decides: terminated when,
// for every pair a, b of survivors, a's sent-to-b equals b's handled-from-a
// in round k, and no survivor's counts changed since round k-1 (it was quiet
// at both reports and nothing reached it in between).  The decider tells the
// survivors (kAmDone), so a rank whose view still holds a lost rank (it has
// not noticed the loss yet, or it got the lost rank's last report) stops too.
// A rank reaches round k+1 only after every survivor's round-k report, so
// reports of rounds k-1..k+1 are all that are ever kept.

bool Remote::store_report(uint32_t src, uint32_t round, const uint32_t* sent,
                          const uint32_t* handled, uint32_t n) noexcept {
  std::lock_guard lock(reports_mu_);
  Report& r = reports_[src][round % kReportSlots];
  r.round = round;
  r.sent.assign(sent, sent + n);
  r.handled.assign(handled, handled + n);
  return true;
}

bool Remote::have_reports(uint32_t round) noexcept {
  std::lock_guard lock(reports_mu_);
  for (uint32_t a = 0; a < size_; ++a) {
    if (lost_[a].load(std::memory_order_acquire)) continue;
    if (reports_[a][round % kReportSlots].round != round) return false;
  }
  return true;
}

bool Remote::terminated(uint32_t round) noexcept {
  if (round < 2) return false;
  std::lock_guard lock(reports_mu_);
  auto alive = [&](uint32_t a) { return !lost_[a].load(std::memory_order_acquire); };
  for (uint32_t a = 0; a < size_; ++a) {
    if (!alive(a)) continue;
    const Report& now = reports_[a][round % kReportSlots];
    const Report& before = reports_[a][(round - 1) % kReportSlots];
    if (now.round != round || before.round != round - 1) return false;
    for (uint32_t b = 0; b < size_; ++b) {
      if (!alive(b)) continue;
      const Report& other = reports_[b][round % kReportSlots];
      if (other.round != round) return false;
      if (now.sent[b] != before.sent[b] || now.handled[b] != before.handled[b]) return false;
      if (b != a && now.sent[b] != other.handled[a]) return false;
    }
  }
  return true;
}

bool Remote::send_to_survivors(uint32_t am, const uint64_t* args, uint32_t nargs,
                               const void* payload, std::size_t len) noexcept {
  for (uint32_t r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    for (;;) {
      if (lost_[r].load(std::memory_order_acquire)) break;
      const tsu_status_t st =
          payload ? tsu_try_am_medium(r, am, args, nargs, payload, len, tsu_cb_none())
                  : tsu_try_am_short(r, am, args, nargs, tsu_cb_none());
      if (st == TSU_OK) break;
      if (st == TSU_ERR_PEER_LOST) {
        on_peer_lost(r);
        break;
      }
      if (st != TSU_EAGAIN) return false;
      tsu_progress();
    }
  }
  return true;
}

tsu_status_t Remote::finish_by_allreduce() {
  uint64_t prev = UINT64_MAX;
  for (;;) {
    while (sched_.live() != 0 || !flush()) {
      tsu_progress();
      timespec ts{0, 50'000};
      nanosleep(&ts, nullptr);
    }
    uint64_t in[2] = {0, 0}, sum[2] = {0, 0};
    for (uint32_t r = 0; r < size_; ++r) {
      in[0] += sent_to_[r].load(std::memory_order_relaxed);
      in[1] += handled_from_[r].load(std::memory_order_relaxed);
    }
    tsu_counter_t c;
    tsu_counter_init(&c);
    tsu_status_t st = tsu_try_allreduce(TSU_TEAM_WORLD, in, sum, 2, TSU_DT_UINT64, TSU_OP_SUM,
                                        tsu_counter_cb(&c));
    if (st == TSU_OK) st = tsu_counter_wait(&c, 1);
    if (st != TSU_OK) return st;
    if (sum[0] == sum[1] && sum[0] == prev) return TSU_OK;
    prev = sum[0] == sum[1] ? sum[0] : UINT64_MAX;
  }
}

tsu_status_t Remote::finish() {
  auto pause = [] {
    tsu_progress();
    timespec ts{0, 50'000};
    nanosleep(&ts, nullptr);
  };
  tsu_status_t st = TSU_OK;
  if (2 * size_ * sizeof(uint32_t) > tsu_am_medium_max()) {
    // A report does not fit one message: the collective count (a rank lost
    // meanwhile makes it fail with TSU_ERR_PEER_LOST).
    st = finish_by_allreduce();
  } else {
    // Any rank's loss must end the wait for its report: watch them all.
    for (uint32_t r = 0; r < size_; ++r) watch(r);
    std::vector<uint32_t> mine(2 * size_);
    for (uint32_t round = 1; !terminated_.load(std::memory_order_acquire); ++round) {
      // Quiet here: nothing runs, nothing waits to leave.
      while ((sched_.live() != 0 || !flush()) && !terminated_.load(std::memory_order_acquire))
        pause();
      if (terminated_.load(std::memory_order_acquire)) break;
      for (uint32_t r = 0; r < size_; ++r) {
        mine[r] = sent_to_[r].load(std::memory_order_relaxed);
        mine[size_ + r] = handled_from_[r].load(std::memory_order_relaxed);
      }
      store_report(rank_, round, mine.data(), mine.data() + size_, size_);
      const uint64_t arg = round;
      if (!send_to_survivors(kAmReport, &arg, 1, mine.data(), mine.size() * sizeof(uint32_t))) {
        st = TSU_ERR_UNREACHABLE;
        break;
      }
      while (!have_reports(round) && !terminated_.load(std::memory_order_acquire)) pause();
      if (terminated_.load(std::memory_order_acquire)) break;
      if (terminated(round)) {
        terminated_.store(true, std::memory_order_release);
        send_to_survivors(kAmDone, &arg, 1, nullptr, 0);
      }
    }
    for (uint32_t r = 0; r < size_; ++r)
      if (lost_[r].load(std::memory_order_acquire) && st == TSU_OK) st = TSU_ERR_PEER_LOST;
  }
  for (auto& w : watches_) {
    if (w->state.load(std::memory_order_acquire) != 1) continue;
    tsu_recv_cancel(w->handle);
    while (w->state.load(std::memory_order_acquire) != 2) tsu_progress();
  }
  return st;
}
}  // namespace tsu::ult
