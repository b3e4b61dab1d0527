// Client of tsurun's bootstrap service: blocking request/reply over a Unix
// stream socket (wire format in wire.hpp).
#include "bootstrap/local/local_bootstrap.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <chrono>
#include <thread>

namespace tsu::bootstrap {

namespace {

std::string errno_text(const char* what, int err) {
  return std::string(what) + ": " + std::strerror(err);
}

const char* type_name(wire::MsgType t) {
  switch (t) {
    case wire::MsgType::kHello: return "Hello";
    case wire::MsgType::kPut: return "Put";
    case wire::MsgType::kGet: return "Get";
    case wire::MsgType::kBarrier: return "Barrier";
    case wire::MsgType::kFinalize: return "Finalize";
    case wire::MsgType::kAuth: return "Auth";
    case wire::MsgType::kChallenge: return "Challenge";
    case wire::MsgType::kHelloOk: return "HelloOk";
    case wire::MsgType::kPutOk: return "PutOk";
    case wire::MsgType::kValue: return "Value";
    case wire::MsgType::kBarrierDone: return "BarrierDone";
    case wire::MsgType::kFinalizeOk: return "FinalizeOk";
    case wire::MsgType::kError: return "Error";
  }
  return "?";
}

}  // namespace

namespace {

// Opens a stream socket to the service: -1 with `error` on failure.
int open_unix(const std::string& path, std::string& error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), path.size());
  // CLOEXEC so programs the rank execs do not keep the connection open.
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    error = errno_text("bootstrap socket()", errno);
    return -1;
  }
  int rc;
  do {
    rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    error = errno_text(("cannot connect to bootstrap socket '" + path + "'").c_str(), errno);
    ::close(fd);
    return -1;
  }
  return fd;
}

int open_tcp(const sockaddr_in& addr, const std::string& where, std::string& error) {
  int fd = -1;
  int err = 0;
  // The launcher may still be starting its listener on a slow remote start.
  for (int attempt = 0; attempt < 50; ++attempt) {
    fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      error = errno_text("bootstrap socket()", errno);
      return -1;
    }
    int rc;
    do {
      rc = ::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr);
    } while (rc != 0 && errno == EINTR);
    if (rc == 0) break;
    err = errno;
    ::close(fd);
    fd = -1;
    if (err != ECONNREFUSED) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  if (fd < 0) {
    error = errno_text(("cannot connect to bootstrap " + where).c_str(), err);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// A connection the service closed before the handshake completed may have
// been pushed out by a flood of unauthenticated ones: try again a few times.
constexpr int kHandshakeAttempts = 8;

}  // namespace

std::unique_ptr<LocalBootstrap> LocalBootstrap::connect(const std::string& path, uint32_t rank, uint32_t size,
                                                        const auth::Secret& secret, tsu_status_t& status,
                                                        std::string& error) {
  status = TSU_ERR_BOOTSTRAP;
  if (path.empty() || path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    error = "bootstrap socket path '" + path + "' is empty or too long";
    status = TSU_ERR_CONFIG;
    return nullptr;
  }
  for (int attempt = 0;; ++attempt) {
    const int fd = open_unix(path, error);
    if (fd < 0) return nullptr;
    bool retry = false;
    auto b = hello(fd, rank, size, secret, status, error, retry);
    if (b || !retry || attempt + 1 == kHandshakeAttempts) return b;
    std::this_thread::sleep_for(std::chrono::milliseconds(20 << attempt));
  }
}

std::unique_ptr<LocalBootstrap> LocalBootstrap::connect_tcp(const std::string& host, uint16_t port,
                                                            uint32_t rank, uint32_t size,
                                                            const auth::Secret& secret,
                                                            tsu_status_t& status,
                                                            std::string& error) {
  status = TSU_ERR_BOOTSTRAP;
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  const int gai = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res);
  if (gai != 0 || !res) {
    error = "bootstrap host '" + host + "': " + ::gai_strerror(gai);
    return nullptr;
  }
  sockaddr_in addr{};
  std::memcpy(&addr, res->ai_addr, sizeof addr);
  ::freeaddrinfo(res);
  const std::string where = "tcp:" + host + ":" + std::to_string(port);
  for (int attempt = 0;; ++attempt) {
    const int fd = open_tcp(addr, where, error);
    if (fd < 0) return nullptr;
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char ip[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0)
      ::inet_ntop(AF_INET, &local.sin_addr, ip, sizeof ip);
    bool retry = false;
    auto b = hello(fd, rank, size, secret, status, error, retry);
    if (b) b->reachable_ = ip;
    if (b || !retry || attempt + 1 == kHandshakeAttempts) return b;
    std::this_thread::sleep_for(std::chrono::milliseconds(20 << attempt));
  }
}

std::unique_ptr<LocalBootstrap> LocalBootstrap::hello(int fd, uint32_t rank, uint32_t size,
                                                      const auth::Secret& secret, tsu_status_t& status,
                                                      std::string& error, bool& retry) {
  status = TSU_ERR_BOOTSTRAP;
  retry = false;
  std::unique_ptr<LocalBootstrap> b(new LocalBootstrap(fd, rank, size));
  auth::Nonce client_nonce{};
  if (!auth::random_nonce(client_nonce)) {
    error = "bootstrap: libsodium cannot be initialised (no randomness source?)";
    return nullptr;
  }
  const char* job = std::getenv("TSU_JOBID");
  const std::string job_id = job ? job : "";
  wire::Writer w;
  w.u32(wire::kProtocolVersion);
  w.u32(rank);
  w.u32(size);
  w.bytes(std::as_bytes(std::span(client_nonce)));
  wire::Frame reply;
  std::lock_guard lock(b->mu_);
  // An Error reply is the service's verdict; anything else (a closed
  // connection) may be a flood pushing us out, and is retried.
  auto failed = [&] {
    error = b->last_error_;
    retry = !b->refused_;
    return nullptr;
  };
  if (b->call(wire::MsgType::kHello, w.data(), wire::MsgType::kChallenge, reply) != TSU_OK) return failed();
  auth::Nonce server_nonce{};
  auth::Proof service_proof{};
  if (!wire::parse_challenge(reply, server_nonce, service_proof)) {
    b->fail("bootstrap protocol error: malformed Challenge");
    return failed();
  }
  const auto expected = auth::proof(secret, auth::Role::kService, client_nonce, server_nonce, rank, size, job_id);
  if (!auth::proofs_equal(service_proof, expected)) {
    b->fail("the bootstrap service did not prove it holds this job's secret (another job's tsurun, or a "
            "wrong job secret); not authenticating to it");
    return failed();
  }
  const auto mine = auth::proof(secret, auth::Role::kRank, client_nonce, server_nonce, rank, size, job_id);
  if (b->call(wire::MsgType::kAuth, std::as_bytes(std::span(mine)), wire::MsgType::kHelloOk, reply) != TSU_OK)
    return failed();
  status = TSU_OK;
  return b;
}

LocalBootstrap::~LocalBootstrap() {
  if (fd_ >= 0) ::close(fd_);
}

tsu_status_t LocalBootstrap::fail(std::string reason) {
  last_error_ = std::move(reason);
  broken_ = true;
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
  return TSU_ERR_BOOTSTRAP;
}

bool LocalBootstrap::send_all(std::span<const std::byte> b) {
  while (!b.empty()) {
    // MSG_NOSIGNAL: a dead launcher must give an error, not kill the rank with SIGPIPE.
    const ssize_t n = ::send(fd_, b.data(), b.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno_text("bootstrap send", errno));
      return false;
    }
    b = b.subspan(static_cast<size_t>(n));
  }
  return true;
}

bool LocalBootstrap::recv_frame(wire::Frame& out) {
  std::byte buf[4096];
  for (;;) {
    std::string err;
    switch (decoder_.next(out, err)) {
      case wire::FrameDecoder::Result::kFrame: return true;
      case wire::FrameDecoder::Result::kBad:
        fail("bootstrap protocol error from launcher: " + err);
        return false;
      case wire::FrameDecoder::Result::kNeedMore: break;
    }
    const ssize_t n = ::recv(fd_, buf, sizeof(buf), 0);
    if (n == 0) {
      fail("bootstrap connection closed by the launcher (tsurun exited?)");
      return false;
    }
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno_text("bootstrap recv", errno));
      return false;
    }
    decoder_.feed(std::span<const std::byte>(buf, static_cast<size_t>(n)));
  }
}

tsu_status_t LocalBootstrap::call(wire::MsgType type, std::span<const std::byte> payload,
                                  wire::MsgType expect, wire::Frame& reply) {
  if (broken_) {
    // Keep the first reason: it is the one that explains the failure.
    if (last_error_.empty()) last_error_ = "bootstrap connection is closed";
    return TSU_ERR_BOOTSTRAP;
  }
  const auto frame = wire::make_frame(type, payload);
  ++traffic_.requests;
  traffic_.bytes_out += frame.size();
  if (!send_all(frame)) return TSU_ERR_BOOTSTRAP;
  do {
    if (!recv_frame(reply)) return TSU_ERR_BOOTSTRAP;
    traffic_.bytes_in += wire::kHeaderSize + reply.payload.size();
  } while (keep_barrier_done(reply));
  if (reply.type == wire::MsgType::kError) {
    refused_ = true;
    return fail("bootstrap service refused " + std::string(type_name(type)) + ": " +
                std::string(wire::as_string(reply.payload)));
  }
  if (reply.type != expect) {
    return fail("bootstrap protocol error: expected " + std::string(type_name(expect)) +
                ", got " + type_name(reply.type));
  }
  return TSU_OK;
}

tsu_status_t LocalBootstrap::put(std::string_view key, std::span<const std::byte> value) {
  std::lock_guard lock(mu_);
  if (key.empty() || key.size() > wire::kMaxKey ||
      key.size() + value.size() + 16 > wire::kMaxFrame) {
    last_error_ = "bootstrap put: key empty or key/value too large";
    return TSU_ERR_BOOTSTRAP;
  }
  wire::Writer w;
  w.u32(static_cast<uint32_t>(key.size()));
  w.str(key);
  w.bytes(value);
  wire::Frame reply;
  return call(wire::MsgType::kPut, w.data(), wire::MsgType::kPutOk, reply);
}

tsu_status_t LocalBootstrap::get(std::string_view key, std::vector<std::byte>& value) {
  std::lock_guard lock(mu_);
  if (key.empty() || key.size() > wire::kMaxKey) {
    last_error_ = "bootstrap get: key empty or too long";
    return TSU_ERR_BOOTSTRAP;
  }
  wire::Writer w;
  w.str(key);
  wire::Frame reply;
  const tsu_status_t st = call(wire::MsgType::kGet, w.data(), wire::MsgType::kValue, reply);
  if (st == TSU_OK) value = std::move(reply.payload);  // outputs only on success
  return st;
}

bool LocalBootstrap::keep_barrier_done(const wire::Frame& f) {
  if (!barrier_waiting_ || f.type != wire::MsgType::kBarrierDone) return false;
  wire::Reader r(f.payload);
  barrier_done_epoch_ = r.u64();
  if (!r.ok() || !r.at_end()) barrier_done_epoch_ = ~uint64_t{0};  // reported by barrier()
  barrier_done_ = true;
  barrier_waiting_ = false;
  return true;
}

tsu_status_t LocalBootstrap::barrier() {
  std::unique_lock lock(mu_);
  if (broken_) {
    if (last_error_.empty()) last_error_ = "bootstrap connection is closed";
    return TSU_ERR_BOOTSTRAP;
  }
  wire::Writer w;
  w.u64(barrier_epoch_);
  const auto frame = wire::make_frame(wire::MsgType::kBarrier, w.data());
  ++traffic_.requests;
  traffic_.bytes_out += frame.size();
  if (!send_all(frame)) return TSU_ERR_BOOTSTRAP;
  barrier_waiting_ = true;
  barrier_done_ = false;
  // Wait for BarrierDone, holding the lock only to read what has arrived:
  // other threads' requests may go out and be answered meanwhile (the
  // service serves a connection that waits in a barrier).
  while (!barrier_done_) {
    if (broken_) {
      barrier_waiting_ = false;
      return TSU_ERR_BOOTSTRAP;
    }
    wire::Frame f;
    std::string err;
    const auto got = decoder_.next(f, err);
    if (got == wire::FrameDecoder::Result::kBad)
      return fail("bootstrap protocol error from launcher: " + err);
    if (got == wire::FrameDecoder::Result::kFrame) {
      traffic_.bytes_in += wire::kHeaderSize + f.payload.size();
      if (keep_barrier_done(f)) break;
      if (f.type == wire::MsgType::kError) {
        refused_ = true;
        return fail("bootstrap service refused Barrier: " +
                    std::string(wire::as_string(f.payload)));
      }
      return fail("bootstrap protocol error: expected BarrierDone, got " +
                  std::string(type_name(f.type)));
    }
    pollfd p{fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) {
      // Readable (nobody else reads while we hold the lock): one chunk.
      std::byte buf[4096];
      const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
      if (n == 0) return fail("bootstrap connection closed by the launcher (tsurun exited?)");
      if (n < 0 && errno != EINTR) return fail(errno_text("bootstrap recv", errno));
      if (n > 0) decoder_.feed(std::span<const std::byte>(buf, static_cast<size_t>(n)));
      continue;
    }
    lock.unlock();
    ::poll(&p, 1, 10);  // woken by data; at most 10 ms before another look
    lock.lock();
  }
  if (barrier_done_epoch_ != barrier_epoch_) {
    return fail("bootstrap barrier: launcher released epoch " +
                std::to_string(barrier_done_epoch_) + ", expected " +
                std::to_string(barrier_epoch_));
  }
  ++barrier_epoch_;
  return TSU_OK;
}

tsu_status_t LocalBootstrap::finalize() {
  std::lock_guard lock(mu_);
  print_traffic_if_asked(rank_, traffic_);
  wire::Frame reply;
  const tsu_status_t st = call(wire::MsgType::kFinalize, {}, wire::MsgType::kFinalizeOk, reply);
  if (st != TSU_OK) return st;
  broken_ = true;  // later calls fail: this rank said it is leaving
  last_error_ = "bootstrap already finalized";
  ::close(fd_);
  fd_ = -1;
  return TSU_OK;
}

}  // namespace tsu::bootstrap
