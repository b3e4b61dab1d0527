// Runs one job: starts the ranks, serves their bootstrap, forwards their
// output, watches their exits, the timeout and our own signals, and tears
// everything down when the job is over.  Single-threaded, one poll() loop.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bootstrap/auth.hpp"
#include "options.hpp"

namespace tsurun {

class OutputForwarder;

// Exit statuses of tsurun besides "the first failing rank's code".
inline constexpr int kExitInternal = 1;    // tsurun itself failed, or a bootstrap deadlock
inline constexpr int kExitUsage = 2;       // bad command line
inline constexpr int kExitTimeout = 124;   // --timeout expired (as timeout(1))
inline constexpr int kExitNoExec = 127;    // the program could not be executed (as sh)

class Launcher {
 public:
  explicit Launcher(Options opts);
  // Returns tsurun's exit status; every rank has been reaped and the temp
  // directory removed by then.
  int run();

 private:
  using Clock = std::chrono::steady_clock;
  struct Rank {
    pid_t pid = -1;  // also its process group id
    bool reaped = false;
    int status = 0;  // from waitpid
  };

  // The environment of a rank that reads the job secret from `secret_fd`.
  std::vector<std::string> rank_environment(uint32_t rank, int secret_fd) const;
  // Host index of a rank under --hosts and its index among the host's ranks.
  uint32_t host_of(uint32_t rank) const;
  bool hosts_distinct() const;  // --hosts names each host once
  uint32_t local_rank(uint32_t rank) const;
  // Picks (and binds) the TCP bootstrap address for --hosts.
  bool start_tcp_bootstrap(class BootstrapServer& server, std::string& error);
  // Fork+exec one rank; returns 0, or tsurun's exit status after reporting
  // why the rank could not be started.
  int spawn(uint32_t rank, OutputForwarder& out);
  void reap();
  void on_rank_exit(uint32_t rank);
  void on_signal(int sig);
  // Starts tearing the job down: `sig` to every live rank now, SIGKILL after
  // the grace period; tsurun will exit with `code`.
  void stop_job(int code, int sig);
  void signal_live_ranks(int sig);
  std::string live_rank_list() const;
  size_t live_rank_count() const;

  Options opts_;
  std::string job_id_;
  std::string socket_path_;
  std::string bootstrap_spec_;  // TSU_BOOTSTRAP for the ranks
  std::string secret_;          // the job secret as 32 hex digits (sent through a pipe)
  tsu::bootstrap::auth::Secret secret_bytes_{};
  class BootstrapServer* server_ = nullptr;
  std::vector<Rank> ranks_;
  bool stopping_ = false;
  int exit_code_ = 0;
  std::optional<Clock::time_point> kill_at_;  // SIGKILL stragglers then
};

}  // namespace tsurun
