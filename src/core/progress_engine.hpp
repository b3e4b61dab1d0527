// The progress engine (seed 000, improved): requesters push commands into a
// bounded lock-free ring; the executor drains it in batches and starts each
// command through the transport; the completer runs callbacks of finished
// records.  One thread at a time holds the consumer role: the progress thread
// in TSU_PROGRESS_THREAD mode, or whichever thread calls tsu_progress().
// An idle progress thread spins for spin_us, then sleeps on the ring's futex;
// producers learn from their claiming CAS whether to wake it.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "core/command.hpp"
#include "core/command_ring.hpp"
#include "core/completion_table.hpp"
#include "core/config.hpp"

namespace tsu::core {

// What the executor calls to start a command.  Memory transports finish it at
// once (returning its status); returning TSU_EAGAIN would leave the record
// pending for a later finish() (network transports).
class CommandExecutor {
 public:
  virtual ~CommandExecutor() = default;
  virtual tsu_status_t execute(const Command& cmd) noexcept = 0;
};

struct EngineStats {
  std::atomic<uint64_t> commands{0};
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> max_batch{0};
  std::atomic<uint64_t> sleeps{0};
  std::atomic<uint64_t> callbacks{0};
  std::atomic<uint64_t> failed{0};  // commands that failed at the target
};

// True while the calling thread runs a completion callback or is the progress
// thread: blocking waits (quiet, counter wait) there would deadlock.
bool in_progress_context() noexcept;

// Runs a completion callback, marking the thread as in progress context.
void run_callback(const tsu_cb_t& cb, tsu_status_t status) noexcept;

class ProgressEngine {
 public:
  static constexpr std::size_t kBatch = 32;

  ProgressEngine(const Config& cfg, CommandExecutor& executor);
  ~ProgressEngine();
  ProgressEngine(const ProgressEngine&) = delete;
  ProgressEngine& operator=(const ProgressEngine&) = delete;

  tsu_status_t start(std::string& error);
  void stop();

  // Any thread.  False when the ring is full.
  bool submit(const Command& cmd) noexcept { return ring_.try_push(cmd); }

  // Any thread: one executor+completer pass if the consumer role is free.
  // Returns the number of commands started plus callbacks run.
  std::size_t progress() noexcept;

  const EngineStats& stats() const noexcept { return stats_; }
  uint32_t ring_capacity() const noexcept { return ring_.capacity(); }

 private:
  void thread_main();
  std::size_t pass() noexcept;  // consumer role held
  bool try_lock() noexcept {
    return !consumer_busy_.load(std::memory_order_relaxed) &&
           !consumer_busy_.exchange(true, std::memory_order_acquire);
  }
  void unlock() noexcept { consumer_busy_.store(false, std::memory_order_release); }

  const Config cfg_;
  CommandExecutor& executor_;
  CommandRing<Command> ring_;
  CompletionTable completions_;
  EngineStats stats_;
  alignas(kCacheLine) std::atomic<bool> consumer_busy_{false};
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace tsu::core
