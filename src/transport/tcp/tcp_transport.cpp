#include "transport/tcp/tcp_transport.hpp"

#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>

#include "core/log.hpp"
#include "util/clock.hpp"

namespace tsu::transport::tcp {

namespace {

using core::MessageHeader;

constexpr uint64_t kHelloMagic = 0x6f6c6c6568757374ull;  // "tsuhello"
struct Hello {  // a stream's first bytes
  uint64_t magic;
  uint32_t rank;
  uint32_t reserved;
  Token token;
};
static_assert(sizeof(Hello) == 48);

// epoll tags: the listening socket, this rank's streams (by rank), peers'
// streams (by descriptor).
constexpr uint64_t kListenTag = ~uint64_t{0};
constexpr uint64_t kOutTag = uint64_t{1} << 40;
constexpr uint64_t kInTag = uint64_t{1} << 41;
constexpr uint64_t kValueMask = (uint64_t{1} << 40) - 1;

// The transport's own frames (handler kHandlerNone, which no layer sends).
constexpr uint16_t kPing = 1;
constexpr uint16_t kPong = 2;

bool same_token(const Token& a, const Token& b) noexcept {
  uint8_t diff = 0;  // constant time: no early exit on the first difference
  for (std::size_t i = 0; i < a.size(); ++i) diff = static_cast<uint8_t>(diff | (a[i] ^ b[i]));
  return diff == 0;
}

// Small messages leave at once; a silent node is given up by TCP's own
// timers after the peer timeout.
void tune(int fd, uint64_t timeout_ns) noexcept {
  const int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  const int secs = static_cast<int>(std::max<uint64_t>(timeout_ns / 3'000'000'000, 1));
  const int count = 3;
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &secs, sizeof secs);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &one, sizeof one);
  setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &count, sizeof count);
  const unsigned ms = static_cast<unsigned>(timeout_ns / 1'000'000);
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof ms);
}

void append(std::vector<std::byte>& q, const void* p, std::size_t n) {
  const std::size_t had = q.size();
  q.resize(had + n);
  std::memcpy(q.data() + had, p, n);
}

}  // namespace

TcpTransport::TcpTransport(uint32_t rank, uint32_t size, const TcpConfig& cfg, const Token& token)
    : rank_(rank),
      size_(size),
      cfg_(cfg),
      token_(token),
      out_(size),
      in_of_rank_(size, -1),
      lost_(new std::atomic<bool>[size]),
      want_stream_(new std::atomic<bool>[size]),
      watches_(new std::atomic<uint32_t>[size]),
      heard_ns_(new std::atomic<uint64_t>[size]),
      pinged_ns_(size, 0) {
  for (uint32_t r = 0; r < size; ++r) {
    lost_[r].store(false, std::memory_order_relaxed);
    want_stream_[r].store(false, std::memory_order_relaxed);
    watches_[r].store(0, std::memory_order_relaxed);
    heard_ns_[r].store(0, std::memory_order_relaxed);
  }
}

TcpTransport::~TcpTransport() {
  for (Outgoing& o : out_)
    if (o.fd >= 0) close(o.fd);
  for (auto& in : in_)
    if (in) close(in->fd);
  if (listen_fd_ >= 0) close(listen_fd_);
  if (epoll_fd_ >= 0) close(epoll_fd_);
}

tsu_status_t TcpTransport::open(std::string& error) {
  auto fail = [&](const char* what) {
    error = std::string("tcp: ") + what + ": " + std::strerror(errno);
    return TSU_ERR_SYSTEM;
  };
  listen_fd_ = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return fail("socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (inet_pton(AF_INET, cfg_.bind_ip.c_str(), &a.sin_addr) != 1) {
    error = "tcp: '" + cfg_.bind_ip + "' is not an IPv4 address";
    return TSU_ERR_CONFIG;
  }
  if (bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return fail("bind");
  if (listen(listen_fd_, 512) != 0) return fail("listen");
  socklen_t len = sizeof local_;
  if (getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&local_), &len) != 0)
    return fail("getsockname");
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) return fail("epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = kListenTag;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, listen_fd_, &ev) != 0) return fail("epoll_ctl");
  return TSU_OK;
}

tsu_status_t TcpTransport::send_message(uint32_t dst, const MessageHeader& header,
                                        const void* payload) noexcept {
  if (dst >= size_ || dst == rank_) return TSU_ERR_INVALID_ARG;
  if (header.payload_len > cfg_.max_message) return TSU_ERR_INVALID_ARG;
  if (header.payload_len && !payload) return TSU_ERR_NULL_POINTER;
  if (lost_[dst].load(std::memory_order_acquire)) return TSU_ERR_PEER_LOST;
  std::unique_lock lock(mu_);
  Outgoing& o = out_[dst];
  if (o.fd < 0) {
    // The peer's address may take a bootstrap round trip: not under the lock.
    lock.unlock();
    sockaddr_in addr;
    if (!resolve_ || !resolve_(dst, addr)) return TSU_ERR_UNREACHABLE;
    lock.lock();
    if (lost_[dst].load(std::memory_order_acquire)) return TSU_ERR_PEER_LOST;
    if (o.fd < 0)
      if (const tsu_status_t st = start_connect(dst, addr); st != TSU_OK) return st;
  }
  const std::size_t frame = sizeof header + header.payload_len;
  const std::size_t backlog = o.queue.size() - o.written;
  if (backlog && backlog + frame > cfg_.send_queue) return TSU_EAGAIN;
  std::size_t done = 0;
  if (!backlog) {
    // An idle stream: straight to the socket, queued only what it refuses.
    iovec iov[2] = {{const_cast<MessageHeader*>(&header), sizeof header},
                    {const_cast<void*>(payload), header.payload_len}};
    msghdr m{};
    m.msg_iov = iov;
    m.msg_iovlen = header.payload_len ? 2 : 1;
    const ssize_t w = sendmsg(o.fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      lose(dst, std::strerror(errno));
      return TSU_ERR_PEER_LOST;
    }
    done = w > 0 ? static_cast<std::size_t>(w) : 0;
    sent_.fetch_add(1, std::memory_order_relaxed);
    if (done == frame) return TSU_OK;
  } else {
    sent_.fetch_add(1, std::memory_order_relaxed);
  }
  try {
    if (!backlog) {
      o.queue.clear();
      o.written = 0;
      to_flush_.push_back(dst);
    }
    if (done < sizeof header)
      append(o.queue, reinterpret_cast<const std::byte*>(&header) + done, sizeof header - done);
    const std::size_t from = done > sizeof header ? done - sizeof header : 0;
    if (header.payload_len > from)
      append(o.queue, static_cast<const std::byte*>(payload) + from, header.payload_len - from);
  } catch (const std::bad_alloc&) {
    // Part of the frame may be on the wire: the stream cannot go on.
    lose(dst, "out of memory queueing a message");
    return TSU_ERR_NO_MEMORY;
  }
  queued_.fetch_add(1, std::memory_order_relaxed);
  return TSU_OK;
}

tsu_status_t TcpTransport::start_connect(uint32_t dst, const sockaddr_in& addr) noexcept {
  Outgoing& o = out_[dst];
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return TSU_ERR_SYSTEM;
  tune(fd, cfg_.peer_timeout_ns);
  // Connected before the first message is queued (one round trip, once per
  // peer): a message accepted by send_message is then in the kernel, not in
  // this process, and a sender that dies right after still delivers it.
  int err = 0;
  if (connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    err = errno;
    if (err == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      const int ms = static_cast<int>(std::min<uint64_t>(cfg_.peer_timeout_ns / 1'000'000, INT32_MAX));
      socklen_t len = sizeof err;
      if (::poll(&p, 1, ms) <= 0) err = ETIMEDOUT;
      else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
    }
  }
  if (err) {
    close(fd);
    lose(dst, std::strerror(err));  // nobody listens there any more
    return TSU_ERR_PEER_LOST;
  }
  // Readable only when the peer closes or fails it (it never sends on it).
  epoll_event ev{};
  ev.events = EPOLLIN | EPOLLRDHUP;
  ev.data.u64 = kOutTag | dst;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
    close(fd);
    return TSU_ERR_SYSTEM;
  }
  o.fd = fd;
  const Hello hello{kHelloMagic, rank_, 0, token_};
  try {
    o.queue.clear();
    o.written = 0;
    append(o.queue, &hello, sizeof hello);
  } catch (const std::bad_alloc&) {
    lose(dst, "out of memory opening a stream");
    return TSU_ERR_NO_MEMORY;
  }
  if (!flush(o)) {
    lose(dst, "its stream failed");
    return TSU_ERR_PEER_LOST;
  }
  if (!o.queue.empty()) {
    try {
      to_flush_.push_back(dst);
    } catch (const std::bad_alloc&) {
      lose(dst, "out of memory opening a stream");
      return TSU_ERR_NO_MEMORY;
    }
  }
  return TSU_OK;
}

bool TcpTransport::flush(Outgoing& o) noexcept {
  if (o.fd < 0) return true;  // lost meanwhile: nothing to write
  while (o.written < o.queue.size()) {
    const ssize_t w = send(o.fd, o.queue.data() + o.written, o.queue.size() - o.written,
                           MSG_NOSIGNAL | MSG_DONTWAIT);
    if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK;
    o.written += static_cast<std::size_t>(w);
  }
  o.queue.clear();
  o.written = 0;
  return true;
}

void TcpTransport::lose(uint32_t rank, const char* why) noexcept {
  Outgoing& o = out_[rank];
  if (o.fd >= 0) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, o.fd, nullptr);
    close(o.fd);
    o.fd = -1;
  }
  o.queue.clear();
  o.written = 0;
  // After finalizing() a stream that ends is a peer that finalized too.
  if (finalizing_.load(std::memory_order_relaxed)) return;
  if (lost_[rank].exchange(true, std::memory_order_acq_rel)) return;
  TSU_LOG_WARN("tcp: rank %u is lost (%s)", rank, why);
  try {
    lost_now_.push_back(rank);
  } catch (const std::bad_alloc&) {
    TSU_LOG_ERROR("tcp: no memory to report rank %u's loss", rank);
  }
}

void TcpTransport::report_losses() noexcept {
  std::vector<uint32_t> lost;
  {
    std::lock_guard lock(mu_);
    if (lost_now_.empty()) return;
    lost.swap(lost_now_);
  }
  if (lost_fn_)
    for (uint32_t r : lost) lost_fn_(lost_ctx_, r);
}

void TcpTransport::watch_peer(uint32_t rank) noexcept {
  if (rank >= size_ || rank == rank_) return;
  if (watches_[rank].fetch_add(1, std::memory_order_relaxed) == 0) {
    // Silence is counted from the watch's start at the earliest.
    const uint64_t now = util::now_ns();
    uint64_t heard = heard_ns_[rank].load(std::memory_order_relaxed);
    while (heard < now &&
           !heard_ns_[rank].compare_exchange_weak(heard, now, std::memory_order_relaxed)) {
    }
    watched_now_.fetch_add(1, std::memory_order_relaxed);
  }
  want_stream_[rank].store(true, std::memory_order_relaxed);
  any_wanted_.store(true, std::memory_order_release);
}

void TcpTransport::unwatch_peer(uint32_t rank) noexcept {
  if (rank >= size_ || rank == rank_) return;
  if (watches_[rank].fetch_sub(1, std::memory_order_relaxed) == 1)
    watched_now_.fetch_sub(1, std::memory_order_relaxed);
}

void TcpTransport::send_control(uint32_t dst, uint16_t kind) noexcept {
  MessageHeader h{};
  h.handler = core::kHandlerNone;
  h.flags = kind;
  // A full stream is traffic enough: the peer hears from us anyway.
  (void)send_message(dst, h, nullptr);
}

std::size_t TcpTransport::check_watched() noexcept {
  if (!watched_now_.load(std::memory_order_relaxed)) return 0;
  const uint64_t now = util::now_ns();
  if (now < next_check_ns_) return 0;
  next_check_ns_ = now + cfg_.keepalive_ns / 4;
  std::size_t work = 0;
  for (uint32_t r = 0; r < size_; ++r) {
    if (!watches_[r].load(std::memory_order_relaxed) || lost_[r].load(std::memory_order_relaxed))
      continue;
    const uint64_t heard = heard_ns_[r].load(std::memory_order_relaxed);
    const uint64_t silent = now > heard ? now - heard : 0;
    if (silent > cfg_.peer_timeout_ns) {
      std::lock_guard lock(mu_);
      lose(r, "silent past TSU_TCP_PEER_TIMEOUT");
      ++work;
    } else if (silent > cfg_.keepalive_ns && now - pinged_ns_[r] > cfg_.keepalive_ns) {
      pinged_ns_[r] = now;
      pings_.fetch_add(1, std::memory_order_relaxed);
      send_control(r, kPing);
      ++work;
    }
  }
  return work;
}

void TcpTransport::accept_streams() noexcept {
  for (;;) {
    const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    tune(fd, cfg_.peer_timeout_ns);
    try {
      if (static_cast<std::size_t>(fd) >= in_.size()) in_.resize(static_cast<std::size_t>(fd) + 1);
      in_[static_cast<std::size_t>(fd)] = std::make_unique<Incoming>();
    } catch (const std::bad_alloc&) {
      close(fd);
      continue;
    }
    in_[static_cast<std::size_t>(fd)]->fd = fd;
    epoll_event ev{};
    ev.events = EPOLLIN | EPOLLRDHUP;
    ev.data.u64 = kInTag | static_cast<uint64_t>(fd);
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      in_[static_cast<std::size_t>(fd)].reset();
      close(fd);
    }
  }
}

bool TcpTransport::read_stream(Incoming& in, const core::MessageHandlerTable& handlers,
                               std::size_t& work) noexcept {
  constexpr std::size_t kChunk = 64u << 10;
  bool open = true;
  try {
    for (int reads = 0; reads < 4; ++reads) {  // bounded: other streams get their turn
      const std::size_t had = in.buf.size();
      in.buf.resize(had + kChunk);
      const ssize_t r = recv(in.fd, in.buf.data() + had, kChunk, MSG_DONTWAIT);
      in.buf.resize(had + (r > 0 ? static_cast<std::size_t>(r) : 0));
      if (r > 0) continue;
      if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) open = false;
      break;
    }
  } catch (const std::bad_alloc&) {
    TSU_LOG_ERROR("tcp: no memory to read a stream");
    return false;
  }
  std::size_t at = 0;
  const std::size_t n = in.buf.size();
  if (n && in.rank != UINT32_MAX) heard_ns_[in.rank].store(util::now_ns(), std::memory_order_relaxed);
  while (open || at < n) {
    if (in.rank == UINT32_MAX) {
      if (n - at < sizeof(Hello)) break;
      Hello h;
      std::memcpy(&h, in.buf.data() + at, sizeof h);
      if (h.magic != kHelloMagic || h.rank >= size_ || h.rank == rank_ ||
          !same_token(h.token, token_)) {
        TSU_LOG_WARN("tcp: dropped a stream without this job's hello");
        return false;
      }
      in.rank = h.rank;
      in_of_rank_[in.rank] = in.fd;
      heard_ns_[in.rank].store(util::now_ns(), std::memory_order_relaxed);
      at += sizeof h;
      continue;
    }
    if (n - at < sizeof(MessageHeader)) break;
    MessageHeader h;
    std::memcpy(&h, in.buf.data() + at, sizeof h);
    if (h.payload_len > cfg_.max_message) {
      TSU_LOG_ERROR("tcp: rank %u sent a %u-byte message (most %zu): stream dropped", in.rank,
                    h.payload_len, cfg_.max_message);
      return false;
    }
    if (n - at < sizeof h + h.payload_len) break;
    // A rank declared lost stays lost: what it sent after that is dropped.
    if (h.handler == core::kHandlerNone) {
      if (h.flags == kPing) send_control(in.rank, kPong);
    } else if (!lost_[in.rank].load(std::memory_order_acquire)) {
      handlers.dispatch(in.rank, h, in.buf.data() + at + sizeof h);
      received_.fetch_add(1, std::memory_order_relaxed);
    }
    at += sizeof h + h.payload_len;
    ++work;
  }
  in.buf.erase(in.buf.begin(), in.buf.begin() + static_cast<std::ptrdiff_t>(at));
  return open;
}

std::size_t TcpTransport::poll(const core::MessageHandlerTable& handlers) noexcept {
  std::size_t work = 0;
  epoll_event ev[64];
  const int ready = epoll_wait(epoll_fd_, ev, 64, 0);
  // A peer's stream ends when its process does; what it sent on its own
  // stream before that is already here (in order, on another socket):
  // delivered first, then the peer is lost.
  auto end_stream = [&](Incoming* in, const char* why) {
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, in->fd, nullptr);
    close(in->fd);
    const uint32_t r = in->rank;
    const auto fd = static_cast<std::size_t>(in->fd);
    if (r != UINT32_MAX && in_of_rank_[r] == in->fd) in_of_rank_[r] = -1;
    in_[fd].reset();
    if (r != UINT32_MAX) {
      std::lock_guard lock(mu_);
      lose(r, why);
    }
    ++work;
  };
  for (int i = 0; i < ready; ++i) {
    const uint64_t tag = ev[i].data.u64;
    if (tag == kListenTag) {
      accept_streams();
      ++work;
    } else if (tag & kOutTag) {
      // Our own stream turned readable: the peer closed or reset it.
      const auto r = static_cast<uint32_t>(tag & kValueMask);
      std::unique_lock lock(mu_);
      if (out_[r].fd < 0) continue;
      char c;
      const ssize_t n = recv(out_[r].fd, &c, 1, MSG_DONTWAIT);
      if (n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) continue;
      const char* why = n == 0 ? "its stream closed" : std::strerror(errno);
      lock.unlock();
      // The peer's own stream to us first: all it holds is delivered, the
      // stream itself perhaps still waiting to be accepted.
      accept_streams();
      for (std::size_t fd = 0; fd < in_.size(); ++fd)
        if (in_[fd] && in_[fd]->rank == UINT32_MAX && !read_stream(*in_[fd], handlers, work))
          end_stream(in_[fd].get(), "its stream ended");
      const int in_fd = in_of_rank_[r];
      Incoming* in = in_fd >= 0 ? in_[static_cast<std::size_t>(in_fd)].get() : nullptr;
      while (in && read_stream(*in, handlers, work)) {
        pollfd p{in->fd, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0) break;  // drained
      }
      if (in) {
        end_stream(in, why);
      } else {
        lock.lock();
        lose(r, why);
        ++work;
      }
    } else {
      const auto fd = static_cast<std::size_t>(tag & kValueMask);
      Incoming* in = fd < in_.size() ? in_[fd].get() : nullptr;
      if (!in || read_stream(*in, handlers, work)) continue;
      end_stream(in, "its stream ended");
    }
  }
  // Streams that waits asked for (watch_peer): resolved outside the lock.
  if (any_wanted_.exchange(false, std::memory_order_acq_rel)) {
    for (uint32_t r = 0; r < size_; ++r) {
      if (!want_stream_[r].exchange(false, std::memory_order_relaxed)) continue;
      {
        std::lock_guard lock(mu_);
        if (out_[r].fd >= 0 || lost_[r].load(std::memory_order_relaxed)) continue;
      }
      sockaddr_in addr;
      if (!resolve_ || !resolve_(r, addr)) continue;
      std::lock_guard lock(mu_);
      if (out_[r].fd < 0 && !lost_[r].load(std::memory_order_relaxed)) start_connect(r, addr);
      ++work;
    }
  }
  work += check_watched();
  {
    std::lock_guard lock(mu_);
    std::erase_if(to_flush_, [&](uint32_t r) {
      Outgoing& o = out_[r];
      if (!flush(o)) lose(r, "its stream failed");
      return o.fd < 0 || o.queue.empty();
    });
  }
  report_losses();
  return work;
}

bool TcpTransport::prepare_sleep() noexcept {
  std::lock_guard lock(mu_);
  return to_flush_.empty() && lost_now_.empty() &&
         !any_wanted_.load(std::memory_order_acquire);
}

void TcpTransport::print_stats(std::FILE* f) const noexcept {
  std::fprintf(f, "tsunagi[%u] tcp: sent=%llu queued=%llu received=%llu pings=%llu watched=%u\n",
               rank_, static_cast<unsigned long long>(sent_.load()),
               static_cast<unsigned long long>(queued_.load()),
               static_cast<unsigned long long>(received_.load()),
               static_cast<unsigned long long>(pings_.load()), watched_now_.load());
}

}  // namespace tsu::transport::tcp
