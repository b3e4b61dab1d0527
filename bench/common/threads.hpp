// Worker threads for multi-threaded points: a fixed pool (so the library sees
// the same threads for every point instead of registering new ones), optional
// pinning, and the waiting policy that keeps an oversubscribed machine moving.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace bench {

// CPUs this process may run on, in order.
std::vector<int> allowed_cpu_list();

// Pins the calling thread to allowed_cpu_list()[(index + rank offset) % count]
// (the list as it was at the first call).  False on failure.
bool pin_current_thread(int index);

// --pin-ranks: pins the calling (main) thread of rank TSU_RANK to CPU
// rank % count, before tsu_init, so the progress thread it starts inherits that
// CPU; later pinned workers start from the same CPU.  Returns the index into the
// allowed list, or -1 on failure.
int pin_rank_from_env();

// How a thread waits for a completion.  Spinning is the fastest while every
// runnable thread has a core; with more runnable threads than cores (our own
// workers plus the progress thread, or other work on the machine) a spinner
// holds the core the progress thread needs for a whole time slice.  So a wait
// spins for a short while (kSpinPolls) and then yields; when our own threads
// already oversubscribe the CPUs it yields at once.  In manual progress mode
// the waiter drives progress itself.
class Waiter {
 public:
  static constexpr unsigned kSpinPolls = 256;  // about 5-10 us of pause

  Waiter(bool yield_at_once, bool manual_progress)
      : yield_(yield_at_once), manual_(manual_progress) {}
  bool yields() const noexcept { return yield_; }

  // One wait: call pause() until the awaited condition holds.
  class Wait {
   public:
    explicit Wait(const Waiter& w) : w_(w) {}
    void reset() noexcept { polls_ = 0; }  // the awaited thing happened
    void pause();

   private:
    const Waiter& w_;
    unsigned polls_ = 0;
  };

 private:
  bool yield_;
  bool manual_;
};

class WorkerPool {
 public:
  // `pin`: worker i is pinned to CPU i round-robin.
  WorkerPool(int workers, bool pin);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  int size() const noexcept { return static_cast<int>(threads_.size()); }
  // Runs job(i) on workers 0..count-1 at the same time; returns when all are done.
  void run(int count, const std::function<void(int)>& job);

 private:
  void worker_main(int index, bool pin);

  std::mutex mu_;
  std::condition_variable wake_;
  std::condition_variable done_;
  const std::function<void(int)>* job_ = nullptr;
  int job_count_ = 0;
  int running_ = 0;
  unsigned long generation_ = 0;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace bench
