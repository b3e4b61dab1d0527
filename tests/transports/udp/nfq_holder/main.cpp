// nfq_holder: a test facility that delays and reorders packets on the real
// kernel path.  An nftables rule sends packets to NFQUEUE N ("queue num N
// bypass"); this program holds each one for delay ± jitter (plus an extra hold
// for --reorder PCT of them) and then accepts it, releasing packets in order of
// their release time, so jitter and the extra hold reorder them.  It fails
// open: on SIGTERM/SIGINT/SIGHUP, parent death, --max-seconds or an error it
// accepts everything still held, and the bypass flag lets traffic pass once
// the queue is unbound.  Counters go to stdout on exit.  docs/udp.md.
#include <poll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <vector>

#include "hold_schedule.hpp"
#include "kernel_queue.hpp"

namespace {

using tsu::nfq::HoldPolicy;
using tsu::nfq::HoldSchedule;
using tsu::nfq::KernelQueue;
using tsu::nfq::Nanos;

constexpr int kExitSkipped = 77;  // the test harness's SKIPPED code

Nanos now() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return Nanos(std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec);
}

Nanos from_ms(double ms) { return Nanos(static_cast<std::int64_t>(ms * 1e6)); }

// Stop signals arrive through a descriptor so the loop sees them between
// packets, never in the middle of handing a verdict to the kernel.
int open_stop_signal_fd() {
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGHUP);
  sigprocmask(SIG_BLOCK, &stop, nullptr);
  return signalfd(-1, &stop, SFD_NONBLOCK | SFD_CLOEXEC);
}

void print_counters(std::uint16_t queue_number, const HoldSchedule& schedule, const KernelQueue& queue) {
  const auto& c = schedule.counters();
  std::printf(
      "nfq_holder: queue %u counters: queued=%llu held=%llu released=%llu reordered=%llu "
      "bypassed=%llu flushed=%llu peak_held=%llu socket_overflows=%llu verdict_errors=%llu\n",
      unsigned{queue_number}, (unsigned long long)c.queued, (unsigned long long)c.held,
      (unsigned long long)c.released, (unsigned long long)c.reordered, (unsigned long long)c.bypassed,
      (unsigned long long)c.flushed, (unsigned long long)c.peak_held,
      (unsigned long long)queue.socket_overflows(), (unsigned long long)queue.verdict_errors());
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Holds NFQUEUE packets for delay ± jitter, then accepts them (test facility)"};
  unsigned queue_number = 0;
  double delay_ms = 0, jitter_ms = 0, reorder_extra_ms = -1, max_seconds = 0;
  HoldPolicy policy;
  app.add_option("--queue", queue_number, "NFQUEUE number to bind")->check(CLI::Range(0, 65535));
  app.add_option("--delay", delay_ms, "hold every packet this many ms")->check(CLI::NonNegativeNumber);
  app.add_option("--jitter", jitter_ms, "± this many ms, uniform (reorders packets)")->check(CLI::NonNegativeNumber);
  app.add_option("--reorder", policy.reorder_percent, "extra hold for this % of packets")->check(CLI::Range(0, 100));
  app.add_option("--reorder-extra", reorder_extra_ms, "the extra hold in ms (default: 3 x delay, at least 1 ms)")
      ->check(CLI::NonNegativeNumber);
  app.add_option("--max-held", policy.max_held, "packets held at once; beyond, accepted at once")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--seed", policy.seed, "random seed");
  app.add_option("--max-seconds", max_seconds, "stop after this long (0: run until signalled)")
      ->check(CLI::NonNegativeNumber);
  CLI11_PARSE(app, argc, argv);

  policy.delay = from_ms(delay_ms);
  policy.jitter = from_ms(jitter_ms);
  policy.reorder_extra = reorder_extra_ms >= 0 ? from_ms(reorder_extra_ms) : std::max(3 * policy.delay, from_ms(1));

  // Never outlive the script that started us: a leftover holder would keep a
  // deleted namespace alive.
  const pid_t parent = getppid();
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != parent) return 0;
  const int stop_fd = open_stop_signal_fd();
  if (stop_fd < 0) {
    std::perror("nfq_holder: signalfd");
    return 1;
  }

  HoldSchedule schedule(policy);
  std::vector<std::uint32_t> due;
  Nanos arrival_time{0};
  KernelQueue* queue_ptr = nullptr;
  KernelQueue queue(static_cast<std::uint16_t>(queue_number),
                    static_cast<std::uint32_t>(policy.max_held + 1024), [&](std::uint32_t id) {
                      if (!schedule.admit(id, arrival_time)) queue_ptr->accept(id);
                    });
  queue_ptr = &queue;
  if (!queue.valid()) {
    std::printf("nfq_holder: %s\n", queue.error().c_str());
    return kExitSkipped;
  }
  std::printf("nfq_holder: ready on queue %u (delay %.3f ms ± %.3f ms, reorder %u%% +%.3f ms, max held %zu)\n",
              queue_number, delay_ms, jitter_ms, policy.reorder_percent,
              static_cast<double>(policy.reorder_extra.count()) / 1e6, policy.max_held);
  std::fflush(stdout);

  const Nanos deadline = max_seconds > 0 ? now() + from_ms(max_seconds * 1000) : Nanos::max();
  int status = 0;
  pollfd fds[2] = {{queue.fd(), POLLIN, 0}, {stop_fd, POLLIN, 0}};
  for (;;) {
    due.clear();
    schedule.take_due(now(), due);
    for (std::uint32_t id : due) queue.accept(id);

    const Nanos t = now();
    if (t >= deadline) break;
    const Nanos wake = std::min(deadline, schedule.next_release().value_or(Nanos::max()));
    const Nanos wait = std::max(wake - t, Nanos(0));  // a release may have come due since take_due
    const timespec timeout{static_cast<time_t>(wait.count() / 1'000'000'000),
                           static_cast<long>(wait.count() % 1'000'000'000)};
    const bool forever = wake == Nanos::max();
    if (ppoll(fds, 2, forever ? nullptr : &timeout, nullptr) < 0) {
      if (errno == EINTR) continue;
      std::perror("nfq_holder: ppoll");
      status = 1;
      break;
    }
    if (fds[1].revents) break;
    if (fds[0].revents) {
      arrival_time = now();
      if (!queue.read_pending()) {
        std::printf("nfq_holder: %s\n", queue.error().c_str());
        status = 1;
        break;
      }
    }
  }
  // Fail open: whatever is still held goes on now.
  due.clear();
  schedule.take_all(due);
  for (std::uint32_t id : due) queue.accept(id);
  print_counters(static_cast<std::uint16_t>(queue_number), schedule, queue);
  close(stop_fd);
  return status;
}
