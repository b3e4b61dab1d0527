#include "stack_pool.hpp"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "scheduler.hpp"

namespace tsu::ult {

namespace {
constexpr std::size_t kSlabStacks = 16;  // default-size stacks per mapping

std::size_t round_up(std::size_t v, std::size_t to) { return (v + to - 1) / to * to; }
}  // namespace

StackPool::StackPool(std::size_t default_size, bool guard) noexcept
    : size_(round_up(default_size, static_cast<std::size_t>(sysconf(_SC_PAGESIZE)))),
      guard_(guard),
      page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))) {}

StackPool::~StackPool() {
  for (auto& [p, len] : slabs_) munmap(p, len);
}

bool StackPool::map_slab() noexcept {
  // Each stack reserves twice the default size (address space only: pages
  // are backed when touched), so a thread a little way into its stack still
  // has a whole default stack left to run a joined thread inline
  // (Worker::run_inline).  Every thread gets at least what it asked for.
  const std::size_t usable = 2 * size_;
  const std::size_t slot = usable + (guard_ ? page_ : 0);
  const std::size_t len = slot * kSlabStacks;
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return false;
  auto* b = static_cast<std::byte*>(p);
  slabs_.emplace_back(b, len);
  for (std::size_t i = 0; i < kSlabStacks; ++i) {
    std::byte* s = b + i * slot;
    if (guard_ && mprotect(s, page_, PROT_NONE) != 0) return false;
    free_.push_back(Stack{s + (guard_ ? page_ : 0), usable, guard_, true});
  }
  mapped_ += kSlabStacks;
  return true;
}

Stack StackPool::map_one(std::size_t size) noexcept {
  size = round_up(size, page_);
  const std::size_t len = size + (guard_ ? page_ : 0);
  void* p = mmap(nullptr, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return Stack{};
  auto* b = static_cast<std::byte*>(p);
  if (guard_ && mprotect(b, page_, PROT_NONE) != 0) {
    munmap(p, len);
    return Stack{};
  }
  return Stack{b + (guard_ ? page_ : 0), size, guard_, false};
}

Stack StackPool::take(std::size_t size) noexcept {
  if (size > size_) return map_one(size);
  std::lock_guard lock(mu_);
  if (free_.empty() && !map_slab()) return Stack{};
  Stack s = free_.back();
  free_.pop_back();
  return s;
}

void StackPool::give(const Stack& s) noexcept {
  if (!s.pooled) {
    munmap(s.base - (s.guarded ? page_ : 0), s.size + (s.guarded ? page_ : 0));
    return;
  }
  std::lock_guard lock(mu_);
  free_.push_back(s);
}

void StackPool::take_batch(std::vector<Stack>& into, std::size_t n) noexcept {
  std::lock_guard lock(mu_);
  while (free_.size() < n && map_slab()) {
  }
  n = std::min(n, free_.size());
  into.insert(into.end(), free_.end() - static_cast<std::ptrdiff_t>(n), free_.end());
  free_.resize(free_.size() - n);
}

void StackPool::give_batch(std::vector<Stack>& from, std::size_t n) noexcept {
  std::lock_guard lock(mu_);
  n = std::min(n, from.size());
  free_.insert(free_.end(), from.end() - static_cast<std::ptrdiff_t>(n), from.end());
  from.resize(from.size() - n);
}

uint64_t StackPool::mapped() const noexcept {
  std::lock_guard lock(mu_);
  return mapped_;
}

// ---- Overflow reports --------------------------------------------------------

namespace {
struct sigaction g_old_segv, g_old_bus;
std::once_flag g_reporter_once;
thread_local void* t_altstack = nullptr;

void write_all(const char* s) noexcept {
  std::size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t w = write(STDERR_FILENO, s, n);
    if (w <= 0) return;
    s += w;
    n -= static_cast<std::size_t>(w);
  }
}

// Decimal or hex digits of v into buf (async-signal-safe); returns buf.
const char* format_u64(char (&buf)[24], uint64_t v, unsigned base) noexcept {
  char* p = buf + sizeof buf - 1;
  *p = '\0';
  do {
    *--p = "0123456789abcdef"[v % base];
    v /= base;
  } while (v != 0);
  return p;
}

void on_fault(int sig, siginfo_t* info, void* uctx) {
  const auto* addr = static_cast<const std::byte*>(info->si_addr);
  const long page = sysconf(_SC_PAGESIZE);
  char name[64];
  uint64_t id = 0;
  if (current_stack_guard_hit(addr, static_cast<std::size_t>(page), name, sizeof name, id)) {
    // Written piece by piece (no buffer to cut it short, nothing that is
    // not async-signal-safe), then the process ends as ult.h says.
    char num[24];
    write_all("tsunagi-ult: stack overflow in user-level thread ");
    write_all(format_u64(num, id, 10));
    write_all(" '");
    write_all(name);
    write_all("' (fault at 0x");
    write_all(format_u64(num, reinterpret_cast<uintptr_t>(info->si_addr), 16));
    write_all(", in the guard page under its stack; raise the stack size with "
              "tsu_ult_attr_t.stack_size or TSU_ULT_STACK_SIZE)\n");
    signal(SIGABRT, SIG_DFL);
    abort();
  }
  // Not an overflow: hand over to whatever handled the signal before us
  // (default: die).
  struct sigaction& old = sig == SIGSEGV ? g_old_segv : g_old_bus;
  if ((old.sa_flags & SA_SIGINFO) && old.sa_sigaction) {
    old.sa_sigaction(sig, info, uctx);
    return;
  }
  if (old.sa_handler != SIG_DFL && old.sa_handler != SIG_IGN && old.sa_handler) {
    old.sa_handler(sig);
    return;
  }
  signal(sig, SIG_DFL);
  raise(sig);
}
}  // namespace

void install_overflow_reporter() noexcept {
  std::call_once(g_reporter_once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, &g_old_segv);
    sigaction(SIGBUS, &sa, &g_old_bus);
  });
}

void give_thread_altstack() noexcept {
  const std::size_t size = 64 * 1024;
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return;
  stack_t ss{};
  ss.ss_sp = p;
  ss.ss_size = size;
  if (sigaltstack(&ss, nullptr) != 0) {
    munmap(p, size);
    return;
  }
  t_altstack = p;
}

void drop_thread_altstack() noexcept {
  if (!t_altstack) return;
  stack_t ss{};
  ss.ss_flags = SS_DISABLE;
  sigaltstack(&ss, nullptr);
  munmap(t_altstack, 64 * 1024);
  t_altstack = nullptr;
}

}  // namespace tsu::ult
