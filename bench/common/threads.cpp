#include "threads.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstdlib>

#include <tsunagi/tsunagi.h>

#include "timer.hpp"

namespace bench {

std::vector<int> allowed_cpu_list() {
  std::vector<int> cpus;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return {0};
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

namespace {

// The CPUs allowed when the process started (before pin_rank_from_env), and
// the rank's offset into them.
const std::vector<int>& base_cpus() {
  static const std::vector<int> cpus = allowed_cpu_list();
  return cpus;
}
int g_cpu_offset = 0;

}  // namespace

bool pin_current_thread(int index) {
  const std::vector<int>& cpus = base_cpus();
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpus[static_cast<std::size_t>(index + g_cpu_offset) % cpus.size()], &set);
  return pthread_setaffinity_np(pthread_self(), sizeof set, &set) == 0;
}

int pin_rank_from_env() {
  const char* text = std::getenv("TSU_RANK");
  const int rank = text ? std::atoi(text) : 0;
  base_cpus();
  g_cpu_offset = rank;
  return pin_current_thread(0) ? rank % static_cast<int>(base_cpus().size()) : -1;
}

void Waiter::Wait::pause() {
  if (w_.manual_) tsu_progress();
  if (w_.yield_ || ++polls_ > kSpinPolls) sched_yield();
  else cpu_relax();
}

WorkerPool::WorkerPool(int workers, bool pin) {
  for (int i = 0; i < workers; ++i) threads_.emplace_back([this, i, pin] { worker_main(i, pin); });
}

WorkerPool::~WorkerPool() {
  {
    std::lock_guard lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

void WorkerPool::run(int count, const std::function<void(int)>& job) {
  std::unique_lock lock(mu_);
  job_ = &job;
  job_count_ = count;
  running_ = count;
  ++generation_;
  wake_.notify_all();
  done_.wait(lock, [this] { return running_ == 0; });
  job_ = nullptr;
}

void WorkerPool::worker_main(int index, bool pin) {
  if (pin) pin_current_thread(index);
  unsigned long seen = 0;
  std::unique_lock lock(mu_);
  for (;;) {
    wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (index >= job_count_) continue;
    const std::function<void(int)>* job = job_;
    lock.unlock();
    (*job)(index);
    lock.lock();
    if (--running_ == 0) done_.notify_all();
  }
}

}  // namespace bench
