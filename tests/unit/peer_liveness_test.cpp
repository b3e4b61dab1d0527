// PeerLiveness (transport/shm/peer_liveness.hpp): a node peer's exit is
// reported once, a live peer never, and checks come at most once per
// interval.  The "peers" are child processes of the test.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <vector>

#include "transport/shm/peer_liveness.hpp"

namespace {

using tsu::transport::shm::PeerLiveness;
constexpr uint64_t kStep = PeerLiveness::kIntervalNs;

pid_t child_that_waits() {
  const pid_t pid = fork();
  if (pid == 0) {
    pause();
    _exit(0);
  }
  return pid;
}

TEST(PeerLiveness, ReportsAnExitOnceAndALivePeerNever) {
  const pid_t live = child_that_waits();
  ASSERT_GT(live, 0);
  const pid_t dying = fork();
  if (dying == 0) _exit(3);
  ASSERT_GT(dying, 0);
  int status = 0;  // reaped: the kill(pid, 0) fallback sees an exit only then
  ASSERT_EQ(waitpid(dying, &status, 0), dying);
  EXPECT_EQ(WEXITSTATUS(status), 3);

  PeerLiveness l;
  l.add(3, live, static_cast<int>(syscall(SYS_pidfd_open, live, 0)));
  l.add(7, dying, -1);  // the kill(pid, 0) fallback
  std::vector<uint32_t> lost;
  auto note = [&](uint32_t r) { lost.push_back(r); };
  uint64_t now = kStep;
  for (int i = 0; i < 500 && lost.empty(); ++i) {  // the child exits at once; 5 s at most
    now += kStep;
    l.check(now, note);
    if (lost.empty()) usleep(10 * 1000);
  }
  EXPECT_EQ(lost, std::vector<uint32_t>{7});
  for (int i = 0; i < 5; ++i) l.check(now += kStep, note);  // never again, and not the live one
  EXPECT_EQ(lost, std::vector<uint32_t>{7});
  EXPECT_FALSE(l.empty());

  kill(live, SIGKILL);  // not reaped before the checks: its pidfd sees the exit
  EXPECT_EQ(l.check(now + 1, note), 0u) << "checked again sooner than the interval";
  for (int i = 0; i < 500 && lost.size() < 2; ++i) {  // the kill lands at once; 5 s at most
    l.check(now += kStep, note);
    if (lost.size() < 2) usleep(10 * 1000);
  }
  EXPECT_EQ(lost, (std::vector<uint32_t>{7, 3}));
  EXPECT_TRUE(l.empty());
  ASSERT_EQ(waitpid(live, &status, 0), live);
}

TEST(PeerLiveness, NoPeersNoChecks) {
  PeerLiveness l;
  EXPECT_TRUE(l.empty());
  EXPECT_EQ(l.check(kStep * 10, [](uint32_t) { ADD_FAILURE() << "no peer to report"; }), 0u);
}

}  // namespace
