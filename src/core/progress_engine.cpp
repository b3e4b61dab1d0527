#include "core/progress_engine.hpp"

#include <pthread.h>

#include <cerrno>
#include <cstring>
#include <system_error>

#include "core/log.hpp"
#include "util/clock.hpp"

namespace tsu::core {

namespace {
thread_local bool t_in_progress_context = false;

struct ProgressContextScope {
  bool saved = t_in_progress_context;
  ProgressContextScope() { t_in_progress_context = true; }
  ~ProgressContextScope() { t_in_progress_context = saved; }
};
}  // namespace

bool in_progress_context() noexcept { return t_in_progress_context; }

void run_callback(const tsu_cb_t& cb, tsu_status_t status) noexcept {
  if (!cb.fn) return;
  ProgressContextScope scope;
  cb.fn(status, cb.arg);
}

ProgressEngine::ProgressEngine(const Config& cfg, CommandExecutor& executor)
    : cfg_(cfg),
      executor_(executor),
      ring_(cfg.ring_size),
      // As many records as ring slots: a full ring can always be started.
      completions_(cfg.ring_size) {}

ProgressEngine::~ProgressEngine() { stop(); }

tsu_status_t ProgressEngine::start(std::string& error) {
  if (cfg_.progress_mode != TSU_PROGRESS_THREAD) return TSU_OK;
  try {
    thread_ = std::thread([this] { thread_main(); });
  } catch (const std::system_error& e) {
    error = std::string("cannot start the progress thread: ") + e.what();
    return TSU_ERR_SYSTEM;
  }
  pthread_setname_np(thread_.native_handle(), "tsu-progress");
  return TSU_OK;
}

void ProgressEngine::stop() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_seq_cst);
  ring_.kick();
  thread_.join();
}

std::size_t ProgressEngine::progress() noexcept {
  if (!try_lock()) return 0;
  const std::size_t n = pass();
  unlock();
  return n;
}

std::size_t ProgressEngine::pass() noexcept {
  Command batch[kBatch];
  std::size_t work = 0;
  // Executor: never take more commands than there are free records, so a
  // started command always has one (the rest wait in the ring: back-pressure).
  const std::size_t room = std::min<std::size_t>(kBatch, completions_.free_count());
  const std::size_t n = ring_.pop_batch(batch, room);
  if (n) {
    stats_.batches.store(stats_.batches.load(std::memory_order_relaxed) + 1,
                         std::memory_order_relaxed);
    stats_.commands.store(stats_.commands.load(std::memory_order_relaxed) + n,
                          std::memory_order_relaxed);
    if (n > stats_.max_batch.load(std::memory_order_relaxed))
      stats_.max_batch.store(n, std::memory_order_relaxed);
    for (std::size_t i = 0; i < n; ++i) {
      const uint32_t id = completions_.acquire(batch[i].cb, batch[i].issuer);
      const tsu_status_t st = executor_.execute(batch[i]);
      if (st != TSU_EAGAIN) completions_.finish(id, st);
      if (st != TSU_OK && st != TSU_EAGAIN)
        stats_.failed.store(stats_.failed.load(std::memory_order_relaxed) + 1,
                            std::memory_order_relaxed);
    }
    work += n;
  }
  // Completer.
  const std::size_t done = completions_.run_finished([](const CompletionRecord& rec) {
    run_callback(rec.cb, rec.status);
    rec.issuer->completed.fetch_add(1, std::memory_order_release);
  });
  if (done)
    stats_.callbacks.store(stats_.callbacks.load(std::memory_order_relaxed) + done,
                           std::memory_order_relaxed);
  return work + done;
}

void ProgressEngine::thread_main() {
  t_in_progress_context = true;
  const uint64_t spin_ns = uint64_t{cfg_.spin_us} * 1000;
  uint64_t idle_since = 0;
  while (!stop_.load(std::memory_order_acquire)) {
    if (progress()) {
      idle_since = 0;
      continue;
    }
    const uint64_t now = util::now_ns();
    if (!idle_since) idle_since = now;
    if (now - idle_since < spin_ns) {
      util::cpu_relax();
      continue;
    }
    // Sleep.  prepare_sleep needs the consumer role (it compares with head).
    if (!try_lock()) continue;
    const bool may_sleep = ring_.prepare_sleep();
    unlock();
    if (may_sleep && !stop_.load(std::memory_order_seq_cst)) {
      stats_.sleeps.store(stats_.sleeps.load(std::memory_order_relaxed) + 1,
                          std::memory_order_relaxed);
      // The timeout is only a safety net; pushes and kick() wake us.
      const timespec timeout{0, 200'000'000};
      ring_.sleep(&timeout);
    }
    idle_since = 0;
  }
  // Drain what is left so every accepted request completes.
  while (progress()) {
  }
}

}  // namespace tsu::core
