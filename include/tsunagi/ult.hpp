// tsunagi user-level threads, C++20 layer over <tsunagi/ult.h> (link
// libtsunagi-ult: CMake tsunagi::ult, pkg-config tsunagi-ult).  Header-only;
// it adds no ABI.  Guide: docs/ult.md, "C++".
//
//   tsu::ult::scheduler sched;                    // tsu_ult_init .. tsu_ult_finalize
//   tsu::ult::thread t([] { return std::string("made in a ULT"); });
//   std::string s = t.join();                     // the callable's result
//
//   tsu::ult::mutex mu;                           // std::lock_guard / std::unique_lock
//   std::lock_guard lock(mu);
//
//   point square(const point& p);                 // trivially copyable types
//   auto sq = tsu::ult::register_remote<square>(kSquareId);  // every rank
//   point r = sq.spawn(rank, point{3, 4}).join();
//
// Errors: as in tsunagi.hpp, the calls that cannot return a status throw
// tsu::error (the C status and a message).
#ifndef TSUNAGI_ULT_HPP
#define TSUNAGI_ULT_HPP

#include <array>
#include <atomic>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>

#include "tsunagi/tsunagi.hpp"
#include "tsunagi/ult.h"

namespace tsu::ult {

inline constexpr uint32_t any_rank = TSU_ULT_ANY_RANK;

namespace detail {
[[noreturn]] inline void fail(status st, const char* what) {
  throw error(st, std::string(what) + ": " + tsu_strerror(st));
}
}  // namespace detail

// RAII scheduler: tsu_ult_init in the constructor (throws tsu::error),
// tsu_ult_finalize in the destructor.  With tsunagi initialized both are
// collective: make it after tsu::runtime, so that it ends first.
class scheduler {
 public:
  explicit scheduler(const tsu_ult_config_t* config = nullptr) {
    const status st = tsu_ult_init(config);
    if (st != TSU_OK) detail::fail(st, "tsu_ult_init");
  }
  ~scheduler() { tsu_ult_finalize(); }
  scheduler(const scheduler&) = delete;
  scheduler& operator=(const scheduler&) = delete;

  static uint32_t workers() noexcept { return tsu_ult_workers(); }
};

// ---- Local threads with a typed join ----------------------------------------
namespace detail {

template <typename T>
struct result_slot {
  std::optional<T> value;
  template <typename F>
  void fill(F& fn) {
    value.emplace(std::invoke(std::move(fn)));
  }
  bool filled() const noexcept { return value.has_value(); }
  T take() { return std::move(*value); }
};
template <>
struct result_slot<void> {
  bool ended = false;
  template <typename F>
  void fill(F& fn) {
    std::invoke(std::move(fn));
    ended = true;
  }
  bool filled() const noexcept { return ended; }
  void take() noexcept {}
};

// What a thread object shares with its ULT.  Owned by both until the ULT's
// function returns and until join or detach; the last owner deletes it (a
// detached ULT may end before or after detach).  join needs no count: the
// ULT has ended by then.
template <typename T>
struct thread_state {
  std::atomic<int> owners{2};
  std::exception_ptr thrown;
  result_slot<T> result;

  virtual ~thread_state() = default;
  virtual void run() noexcept = 0;
  void release() noexcept {
    if (owners.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }
  static void* entry(void* self) noexcept {
    auto* s = static_cast<thread_state*>(self);
    s->run();
    s->release();
    return nullptr;
  }
};

template <typename T, typename F>
struct thread_body final : thread_state<T> {
  F fn;
  template <typename G>
  explicit thread_body(G&& g) : fn(std::forward<G>(g)) {}
  // Exceptions stop here, on the ULT's own stack, and reach the joiner.
  void run() noexcept override {
    try {
      this->result.fill(fn);
    } catch (...) {
      this->thrown = std::current_exception();
    }
  }
};

}  // namespace detail

// A ULT running a callable; join() returns its result (or rethrows what it
// threw).  Like std::jthread, a thread still joinable at destruction is
// joined (its result dropped).  The callable must not call tsu_ult_exit: its
// frames are not unwound and join then throws tsu::error
// (TSU_ERR_UNSUPPORTED).
template <typename T>
class thread {
  static_assert(!std::is_reference_v<T>, "tsu::ult::thread<T>: T is returned by value");

 public:
  thread() noexcept = default;
  // attr: stack size and name (not detached: see detach()).  Throws
  // tsu::error with tsu_ult_create's status.
  template <typename F>
    requires(!std::same_as<std::remove_cvref_t<F>, thread> &&
             std::is_invocable_r_v<T, std::decay_t<F>>)
  explicit thread(F&& fn, const tsu_ult_attr_t* attr = nullptr) {
    if (attr && (attr->field_mask & TSU_ULT_ATTR_DETACHED) && attr->detached)
      throw error(TSU_ERR_INVALID_ARG, "tsu::ult::thread: create it joinable, then detach()");
    auto body = std::make_unique<detail::thread_body<T, std::decay_t<F>>>(std::forward<F>(fn));
    const status st = tsu_ult_create(&handle_, attr, &detail::thread_state<T>::entry, body.get());
    if (st != TSU_OK) {
      handle_ = nullptr;
      detail::fail(st, "tsu_ult_create");
    }
    state_ = body.release();
  }
  thread(thread&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)),
        state_(std::exchange(other.state_, nullptr)) {}
  thread& operator=(thread&& other) noexcept {
    if (this != &other) {
      discard();
      handle_ = std::exchange(other.handle_, nullptr);
      state_ = std::exchange(other.state_, nullptr);
    }
    return *this;
  }
  ~thread() { discard(); }

  bool joinable() const noexcept { return handle_ != nullptr; }
  tsu_ult_t native_handle() const noexcept { return handle_; }
  uint64_t id() const noexcept { return tsu_ult_id(handle_); }

  // Waits for the end (a ULT yields meanwhile) and returns the result.
  // Throws tsu::error with tsu_ult_join's status (TSU_ERR_NO_MEMORY: it never
  // ran), or what the callable threw.
  T join() {
    if (!handle_) throw error(TSU_ERR_INVALID_ARG, "tsu::ult::thread::join: not joinable");
    const status st = tsu_ult_join(handle_, nullptr);
    if (st == TSU_ERR_INVALID_ARG) detail::fail(st, "tsu_ult_join");  // handle kept
    handle_ = nullptr;
    std::unique_ptr<detail::thread_state<T>> s(std::exchange(state_, nullptr));
    if (st != TSU_OK) detail::fail(st, "tsu_ult_join");
    if (s->thrown) std::rethrow_exception(s->thrown);
    if (!s->result.filled())
      throw error(TSU_ERR_UNSUPPORTED, "tsu::ult::thread: its function left by tsu_ult_exit");
    return s->result.take();
  }
  // The ULT runs on alone; its state goes when it ends.
  void detach() {
    if (!handle_) throw error(TSU_ERR_INVALID_ARG, "tsu::ult::thread::detach: not joinable");
    const status st = tsu_ult_detach(handle_);
    if (st != TSU_OK) detail::fail(st, "tsu_ult_detach");
    handle_ = nullptr;
    std::exchange(state_, nullptr)->release();
  }

 private:
  void discard() noexcept {
    if (!handle_) return;
    try {
      join();
    } catch (...) {  // the result, or the failure, is nobody's to see
    }
  }

  tsu_ult_t handle_ = nullptr;
  detail::thread_state<T>* state_ = nullptr;
};
// tsu::ult::thread t(fn) is a thread<the callable's result type>.
template <typename F>
thread(F&&, const tsu_ult_attr_t* = nullptr) -> thread<std::invoke_result_t<std::decay_t<F>>>;

// ---- Mutex and condition variable --------------------------------------------
// tsu_ult_mutex_t as a Lockable: std::lock_guard, std::unique_lock,
// std::scoped_lock.  A ULT waiting for it yields its worker; a pthread sleeps.
class mutex {
 public:
  mutex() noexcept = default;
  mutex(const mutex&) = delete;
  mutex& operator=(const mutex&) = delete;

  // Only a null mutex makes these fail, and this one is not.
  void lock() noexcept { tsu_ult_mutex_lock(&m_); }
  bool try_lock() noexcept { return tsu_ult_mutex_trylock(&m_) == TSU_OK; }
  void unlock() noexcept { tsu_ult_mutex_unlock(&m_); }
  tsu_ult_mutex_t* native_handle() noexcept { return &m_; }

 private:
  tsu_ult_mutex_t m_ = TSU_ULT_MUTEX_INITIALIZER;
};

// tsu_ult_cond_t with the std::condition_variable calls (waits take a
// std::unique_lock<tsu::ult::mutex>).
class condition_variable {
 public:
  condition_variable() noexcept = default;
  condition_variable(const condition_variable&) = delete;
  condition_variable& operator=(const condition_variable&) = delete;

  void notify_one() noexcept { tsu_ult_cond_signal(&c_); }
  void notify_all() noexcept { tsu_ult_cond_broadcast(&c_); }
  void wait(std::unique_lock<mutex>& lock) noexcept {
    tsu_ult_cond_wait(&c_, lock.mutex()->native_handle());
  }
  template <typename Predicate>
  void wait(std::unique_lock<mutex>& lock, Predicate pred) {
    while (!pred()) wait(lock);
  }
  tsu_ult_cond_t* native_handle() noexcept { return &c_; }

 private:
  tsu_ult_cond_t c_ = TSU_ULT_COND_INITIALIZER;
};

// ---- Threads on other ranks, typed ---------------------------------------------
// Argument and value cross ranks as bytes: trivially copyable, within the
// C API's limits.
template <typename T>
concept remote_argument = std::is_trivially_copyable_v<T> && sizeof(T) <= TSU_ULT_ARG_MAX;
template <typename T>
concept remote_value =
    std::is_void_v<T> || (std::is_trivially_copyable_v<T> && sizeof(T) <= TSU_ULT_VALUE_MAX);

namespace detail {
// The bytes a value of type R takes (void: none).
template <typename R>
constexpr std::size_t value_size() noexcept {
  if constexpr (std::is_void_v<R>) return 0;
  else return sizeof(R);
}

template <typename Fn>
struct remote_signature {
  static_assert(!sizeof(Fn*), "register_remote<fn>: fn must be a function R fn(A) or R fn(const A&)");
};
template <typename R, typename A>
struct remote_signature<R (*)(A)> {
  using result = R;
  using argument = std::remove_cvref_t<A>;
};
template <typename R, typename A>
struct remote_signature<R (*)(A) noexcept> : remote_signature<R (*)(A)> {};

// The C function registered for Fn.  An exception escaping Fn ends the
// process (noexcept), as one escaping a std::thread's function does.
template <auto Fn>
void remote_entry(const void* arg, std::size_t len, void* value, std::size_t* value_len) noexcept {
  using A = typename remote_signature<decltype(Fn)>::argument;
  using R = typename remote_signature<decltype(Fn)>::result;
  // Spawned with another type: no value, which the typed join reports.
  if (len != sizeof(A)) return;
  std::array<std::byte, sizeof(A)> bytes;
  std::memcpy(bytes.data(), arg, sizeof(A));
  A a = std::bit_cast<A>(bytes);  // not const: fn may take A&
  if constexpr (std::is_void_v<R>) {
    Fn(a);
  } else {
    const R r = Fn(a);
    std::memcpy(value, &r, sizeof(R));
    *value_len = sizeof(R);
  }
}
}  // namespace detail

// A thread started by remote_function::spawn.  join() returns its value.
// Joined at destruction if still joinable (value dropped).
template <typename R>
class remote_thread {
 public:
  remote_thread() noexcept = default;
  explicit remote_thread(tsu_ult_t handle) noexcept : handle_(handle) {}
  remote_thread(remote_thread&& other) noexcept
      : handle_(std::exchange(other.handle_, nullptr)) {}
  remote_thread& operator=(remote_thread&& other) noexcept {
    if (this != &other) {
      discard();
      handle_ = std::exchange(other.handle_, nullptr);
    }
    return *this;
  }
  ~remote_thread() { discard(); }

  bool joinable() const noexcept { return handle_ != nullptr; }
  tsu_ult_t native_handle() const noexcept { return handle_; }
  // The rank running it, as far as this rank knows (tsu_ult_rank_of).
  uint32_t rank() const {
    uint32_t r = 0;
    const status st = tsu_ult_rank_of(handle_, &r);
    if (st != TSU_OK) detail::fail(st, "tsu_ult_rank_of");
    return r;
  }
  // Throws tsu::error with tsu_ult_join_value's status (TSU_ERR_PEER_LOST,
  // ...), or TSU_ERR_INVALID_ARG when the value is not sizeof(R) bytes (the
  // id names another function on the running rank).
  R join() {
    if (!handle_) throw error(TSU_ERR_INVALID_ARG, "tsu::ult::remote_thread::join: not joinable");
    std::array<std::byte, TSU_ULT_VALUE_MAX> buf{};
    std::size_t len = 0;
    const status st = tsu_ult_join_value(handle_, buf.data(), buf.size(), &len);
    if (st == TSU_ERR_INVALID_ARG) detail::fail(st, "tsu_ult_join_value");  // handle kept
    handle_ = nullptr;
    if (st != TSU_OK) detail::fail(st, "tsu_ult_join_value");
    if (len != detail::value_size<R>())
      throw error(TSU_ERR_INVALID_ARG, "tsu::ult::remote_thread::join: a value of " +
                                           std::to_string(len) + " bytes, expected " +
                                           std::to_string(detail::value_size<R>()));
    if constexpr (!std::is_void_v<R>) {
      std::array<std::byte, sizeof(R)> bytes;
      std::memcpy(bytes.data(), buf.data(), sizeof(R));
      return std::bit_cast<R>(bytes);
    }
  }

 private:
  void discard() noexcept {
    if (!handle_) return;
    try {
      join();
    } catch (...) {  // the value, or the failure, is nobody's to see
    }
  }

  tsu_ult_t handle_ = nullptr;
};

// A function id with its argument and value types; made by register_remote.
template <typename A, typename R>
class remote_function {
 public:
  // The id of a function registered with these types (register_remote).
  constexpr explicit remote_function(uint32_t id) noexcept : id_(id) {}
  constexpr uint32_t id() const noexcept { return id_; }

  // Starts fn(arg) on `rank` (any_rank: the balancer's choice).  attr: name,
  // stack size.  Throws tsu::error with tsu_ult_spawn's status.
  remote_thread<R> spawn(uint32_t rank, const A& arg, const tsu_ult_attr_t* attr = nullptr) const {
    if (attr && (attr->field_mask & TSU_ULT_ATTR_DETACHED) && attr->detached)
      throw error(TSU_ERR_INVALID_ARG, "tsu::ult::remote_function::spawn: use spawn_detached");
    tsu_ult_t t = nullptr;
    const status st = tsu_ult_spawn(&t, rank, id_, &arg, sizeof(A), attr);
    if (st != TSU_OK) detail::fail(st, "tsu_ult_spawn");
    return remote_thread<R>(t);
  }
  // The same, not joinable (its value is dropped).
  void spawn_detached(uint32_t rank, const A& arg) const {
    tsu_ult_attr_t attr{};
    attr.struct_size = sizeof attr;
    attr.field_mask = TSU_ULT_ATTR_DETACHED;
    attr.detached = 1;
    const status st = tsu_ult_spawn(nullptr, rank, id_, &arg, sizeof(A), &attr);
    if (st != TSU_OK) detail::fail(st, "tsu_ult_spawn");
  }

 private:
  uint32_t id_;
};

// Collective, like tsu_ult_register: every rank registers the same function
// under `id` before any rank spawns with it.  fn is R fn(A) or R fn(const
// A&), A and R trivially copyable within TSU_ULT_ARG_MAX / TSU_ULT_VALUE_MAX
// bytes (R may be void); checked at compile time.  Throws tsu::error with
// tsu_ult_register's status.
template <auto Fn>
auto register_remote(uint32_t id) {
  using A = typename detail::remote_signature<decltype(Fn)>::argument;
  using R = typename detail::remote_signature<decltype(Fn)>::result;
  static_assert(std::is_trivially_copyable_v<A>,
                "register_remote: the argument type must be trivially copyable (sent as bytes)");
  static_assert(sizeof(A) <= TSU_ULT_ARG_MAX,
                "register_remote: the argument exceeds TSU_ULT_ARG_MAX bytes");
  static_assert(std::is_void_v<R> || std::is_trivially_copyable_v<R>,
                "register_remote: the result type must be trivially copyable (sent as bytes)");
  static_assert(detail::value_size<R>() <= TSU_ULT_VALUE_MAX,
                "register_remote: the result exceeds TSU_ULT_VALUE_MAX bytes");
  const status st = tsu_ult_register(id, &detail::remote_entry<Fn>);
  if (st != TSU_OK) detail::fail(st, "tsu_ult_register");
  return remote_function<A, R>(id);
}

}  // namespace tsu::ult

#endif  // TSUNAGI_ULT_HPP
