#include "bootstrap_server.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <algorithm>
#include <cstring>
#include <utility>

#include "log.hpp"

namespace tsurun {

namespace wire = tsu::bootstrap::wire;
namespace auth = tsu::bootstrap::auth;
using wire::MsgType;

namespace {
// A rank's values rarely exceed a few KiB; printing them would flood -v.
std::string quote_key(std::string_view k) {
  return "'" + std::string(k.substr(0, 200)) + (k.size() > 200 ? "...'" : "'");
}

// Refusals reported one by one before the rest are only counted.
constexpr uint64_t kReportedRefusals = 20;
// Connections accepted per poll round, so a flood cannot starve the ranks.
constexpr int kAcceptsPerRound = 64;

// Who is on the other end, for the log: ip:port, or a Unix peer's pid/uid.
std::string describe_peer(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0 && ss.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(ss);
    char ip[INET_ADDRSTRLEN] = {};
    ::inet_ntop(AF_INET, &in.sin_addr, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(ntohs(in.sin_port));
  }
  ucred cred{};
  socklen_t clen = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen) == 0)
    return "pid " + std::to_string(cred.pid) + " uid " + std::to_string(cred.uid);
  return "unknown peer";
}
}  // namespace

BootstrapServer::BootstrapServer(uint32_t nranks, bool verbose, const auth::Secret& secret, std::string job_id)
    : nranks_(nranks),
      verbose_(verbose),
      secret_(secret),
      job_id_(std::move(job_id)),
      claimed_(nranks, false),
      rank_conn_(nranks, 0),
      lost_(nranks, false) {}

void BootstrapServer::report_refusal(const std::string& msg) {
  ++reported_refusals_;
  if (reported_refusals_ <= kReportedRefusals) report("bootstrap: " + msg);
  if (reported_refusals_ == kReportedRefusals)
    report("bootstrap: further refusals are counted, not logged (summary at the end of the job)");
}

std::string BootstrapServer::refusal_summary() const {
  if (refusals_.total() == 0) return "";
  return "bootstrap: refused " + std::to_string(refusals_.total()) + " connection(s) during the job: " +
         std::to_string(refusals_.failed_proofs) + " failed proof(s) of the job secret, " +
         std::to_string(refusals_.protocol_errors) + " protocol error(s), " +
         std::to_string(refusals_.dropped_pending) + " dropped unauthenticated (over " +
         std::to_string(kMaxPending) + " pending), " + std::to_string(refusals_.claimed_twice) +
         " claim(s) of an already claimed rank, " + std::to_string(refusals_.abandoned) +
         " closed by the client before authenticating";
}

size_t BootstrapServer::pending_count() const {
  size_t n = 0;
  for (const auto& [id, c] : conns_) n += (c.rank < 0 && !c.closing) ? 1 : 0;
  return n;
}

void BootstrapServer::drop_oldest_pending() {
  for (auto& [id, c] : conns_) {  // ids grow: the first unauthenticated one is the oldest
    if (c.rank >= 0 || c.closing) continue;
    ++refusals_.dropped_pending;
    report_refusal("unidentified client (" + c.peer + ") dropped: more than " + std::to_string(kMaxPending) +
                   " connections wait to authenticate");
    close_conn(id);
    return;
  }
}

bool BootstrapServer::listen_tcp(const std::string& ip, uint16_t port, uint16_t& bound,
                                 std::string& error) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) {
    error = "bootstrap address '" + ip + "' is not an IPv4 address";
    return false;
  }
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  const int one = 1;
  if (listen_fd_ >= 0) ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, SOMAXCONN) != 0) {
    error = "cannot listen on tcp " + ip + ":" + std::to_string(port) + ": " + std::strerror(errno);
    return false;
  }
  socklen_t len = sizeof addr;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  bound = ntohs(addr.sin_port);
  return true;
}

void BootstrapServer::mark_lost(uint32_t rank) {
  if (rank >= nranks_ || lost_[rank]) return;
  lost_[rank] = true;
  ++lost_count_;
  log("rank " + std::to_string(rank) + " lost; barriers no longer wait for it");
  maybe_release_barrier();
}

void BootstrapServer::maybe_release_barrier() {
  if (barrier_arrived_ == 0 || barrier_arrived_ + lost_count_ < nranks_) return;
  // Everyone (alive) is here: release them all and open the next epoch.
  wire::Writer w;
  w.u64(barrier_epoch_);
  for (auto& [cid, other] : conns_) {
    if (!other.in_barrier) continue;
    other.in_barrier = false;
    send(other, MsgType::kBarrierDone, w.data());
  }
  log("barrier " + std::to_string(barrier_epoch_) + " complete");
  ++barrier_epoch_;
  barrier_arrived_ = 0;
}

BootstrapServer::~BootstrapServer() {
  for (auto& [id, c] : conns_) ::close(c.fd);
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

bool BootstrapServer::listen(const std::string& path, std::string& error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    error = "socket path too long: " + path;
    return false;
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  listen_fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0 ||
      ::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, SOMAXCONN) != 0) {
    error = "cannot listen on " + path + ": " + std::strerror(errno);
    return false;
  }
  return true;
}

void BootstrapServer::log(const std::string& msg) const {
  if (verbose_) report("bootstrap: " + msg);
}

std::string BootstrapServer::who(const Conn& c) const {
  return c.rank >= 0 ? "rank " + std::to_string(c.rank) : "unidentified client";
}

void BootstrapServer::add_pollfds(std::vector<pollfd>& fds) {
  fds.push_back(pollfd{listen_fd_, POLLIN, 0});
  poll_ids_.clear();
  for (const auto& [id, c] : conns_) {
    short ev = c.closing ? short{0} : short{POLLIN};
    if (c.out_pos < c.out.size()) ev = static_cast<short>(ev | POLLOUT);
    fds.push_back(pollfd{c.fd, ev, 0});
    poll_ids_.push_back(id);
  }
}

void BootstrapServer::handle(std::span<const pollfd> fds) {
  if (fds.empty()) return;
  if (fds[0].revents & POLLIN) accept_all();
  for (size_t i = 1; i < fds.size() && i - 1 < poll_ids_.size(); ++i) {
    const short rev = fds[i].revents;
    if (rev == 0) continue;
    const uint64_t id = poll_ids_[i - 1];
    auto it = conns_.find(id);  // an earlier event may have closed it
    if (it == conns_.end()) continue;
    Conn& c = it->second;
    if (rev & POLLOUT) flush(c);
    if (c.fd < 0) {
      close_conn(id);
      continue;
    }
    if (rev & (POLLIN | POLLHUP | POLLERR)) {
      if (c.closing) {
        if (rev & (POLLHUP | POLLERR)) close_conn(id);
      } else {
        on_readable(id, c);
      }
    }
  }
  // Writes that failed while replying to someone else mark fd -1; close them now.
  for (auto it = conns_.begin(); it != conns_.end();) {
    const uint64_t id = it->first;
    const bool done = it->second.fd < 0 || (it->second.closing && it->second.out_pos == it->second.out.size());
    ++it;
    if (done) close_conn(id);
  }
}

void BootstrapServer::accept_all() {
  size_t pending = pending_count();
  for (int round = 0; round < kAcceptsPerRound; ++round) {
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EINTR) continue;
      if ((errno == EMFILE || errno == ENFILE) && pending > 0) {
        drop_oldest_pending();  // make room; the next round accepts again
        return;
      }
      if (errno != EAGAIN && errno != EWOULDBLOCK) report(std::string("bootstrap: accept: ") + std::strerror(errno));
      return;
    }
    const int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // fails harmlessly on Unix sockets
    Conn c;
    c.fd = fd;
    c.peer = describe_peer(fd);
    c.decoder.set_limit(wire::kMaxHandshakeFrame);  // until authenticated
    conns_.emplace(next_id_++, std::move(c));
    if (++pending > kMaxPending) {
      drop_oldest_pending();
      --pending;
    }
  }
}

void BootstrapServer::on_readable(uint64_t id, Conn& c) {
  std::byte buf[16384];
  const ssize_t n = ::recv(c.fd, buf, sizeof(buf), 0);
  if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) return;
  if (n <= 0) {
    // A rank may leave without Finalize; only its exit status decides failure.
    if (c.rank < 0) ++refusals_.abandoned;
    log(who(c) + " disconnected");
    close_conn(id);
    return;
  }
  c.decoder.feed(std::span<const std::byte>(buf, static_cast<size_t>(n)));
  wire::Frame f;
  std::string err;
  while (!c.closing && c.fd >= 0) {
    const auto r = c.decoder.next(f, err);
    if (r == wire::FrameDecoder::Result::kNeedMore) break;
    if (r == wire::FrameDecoder::Result::kBad) {
      protocol_error(c, err);
      break;
    }
    on_frame(id, c, f);
  }
}

void BootstrapServer::protocol_error(Conn& c, const std::string& why) {
  ++refusals_.protocol_errors;
  report_refusal(who(c) + ": protocol error: " + why + " (from " + c.peer + "); dropping the connection");
  send(c, MsgType::kError, std::as_bytes(std::span<const char>(why.data(), why.size())));
  c.closing = true;
}

void BootstrapServer::on_hello(Conn& c, const wire::Request& q) {
  if (c.hello_seen) return protocol_error(c, "second Hello on one connection");
  if (q.size != nranks_ || q.rank >= nranks_)
    return protocol_error(c, "rank " + std::to_string(q.rank) + " of " + std::to_string(q.size) +
                                 " does not belong to this job of " + std::to_string(nranks_));
  c.hello_seen = true;
  c.hello_rank = q.rank;
  std::copy(q.token.begin(), q.token.end(), c.client_nonce.begin());
  if (!auth::random_nonce(c.server_nonce)) return protocol_error(c, "the service cannot draw a nonce");
  // The service proves itself first: a rank never answers a stranger's challenge.
  const auto mine = auth::proof(secret_, auth::Role::kService, c.client_nonce, c.server_nonce, q.rank, q.size,
                                job_id_);
  wire::Writer w;
  w.bytes(std::as_bytes(std::span(c.server_nonce)));
  w.bytes(std::as_bytes(std::span(mine)));
  send(c, MsgType::kChallenge, w.data());
}

void BootstrapServer::on_auth(uint64_t id, Conn& c, const wire::Request& q) {
  if (!c.hello_seen) return protocol_error(c, "first request must be Hello");
  auth::Proof got;
  std::copy(q.token.begin(), q.token.end(), got.begin());
  const auto want = auth::proof(secret_, auth::Role::kRank, c.client_nonce, c.server_nonce, c.hello_rank, nranks_,
                                job_id_);
  if (!auth::proofs_equal(got, want)) {
    ++refusals_.failed_proofs;
    report_refusal("unidentified client (" + c.peer + ") failed to prove it holds the job secret for rank " +
                   std::to_string(c.hello_rank) + "; dropping the connection");
    const std::string why = "authentication failed";
    send(c, MsgType::kError, std::as_bytes(std::span<const char>(why.data(), why.size())));
    c.closing = true;
    return;
  }
  const uint32_t rank = c.hello_rank;
  if (claimed_[rank]) {
    ++refusals_.claimed_twice;
    report_refusal("rank " + std::to_string(rank) + " claimed again (" + c.peer +
                   "); a rank is claimed once per job; dropping the connection");
    const std::string why = "rank " + std::to_string(rank) + " was already claimed in this job";
    send(c, MsgType::kError, std::as_bytes(std::span<const char>(why.data(), why.size())));
    c.closing = true;
    return;
  }
  claimed_[rank] = true;
  c.rank = static_cast<int>(rank);
  rank_conn_[rank] = id;
  c.decoder.set_limit(wire::kMaxFrame);
  log(who(c) + " connected (" + c.peer + ")");
  send(c, MsgType::kHelloOk);
}

void BootstrapServer::on_frame(uint64_t id, Conn& c, const wire::Frame& f) {
  wire::Request q;
  std::string err;
  if (!wire::parse_request(f, q, err)) return protocol_error(c, err);
  if (c.rank < 0) {
    if (q.type == MsgType::kHello) return on_hello(c, q);
    if (q.type == MsgType::kAuth) return on_auth(id, c, q);
    return protocol_error(c, c.hello_seen ? "Auth expected" : "first request must be Hello");
  }

  switch (q.type) {
    case MsgType::kHello:
      return protocol_error(c, "second Hello on one connection");
    case MsgType::kAuth:
      return protocol_error(c, "Auth after authentication");
    case MsgType::kPut: {
      const auto& key = q.key;
      const auto value = q.value;
      auto [slot, fresh] = kv_.try_emplace(key);
      auto& stored = slot->second;
      if (!fresh) {
        // Write once: nobody replaces what a rank published.
        if (stored.size() == value.size() && std::equal(stored.begin(), stored.end(), value.begin()))
          return send(c, MsgType::kPutOk);
        return protocol_error(c, "key " + quote_key(key) + " is already set (keys are written once)");
      }
      log(who(c) + " put " + quote_key(key) + " (" + std::to_string(value.size()) + " bytes)");
      stored.assign(value.begin(), value.end());
      // Wake every rank waiting for this key.
      auto [b, e] = get_waiters_.equal_range(key);
      for (auto w = b; w != e; ++w) {
        auto it = conns_.find(w->second);
        if (it == conns_.end()) continue;
        it->second.waiting_key.clear();
        send(it->second, MsgType::kValue, stored);
      }
      get_waiters_.erase(b, e);
      return send(c, MsgType::kPutOk);
    }
    case MsgType::kGet: {
      const auto& key = q.key;
      if (auto it = kv_.find(key); it != kv_.end()) return send(c, MsgType::kValue, it->second);
      if (!c.waiting_key.empty()) return protocol_error(c, "Get while already waiting in a Get");
      log(who(c) + " waits for " + quote_key(key));
      c.waiting_key = key;
      get_waiters_.emplace(c.waiting_key, id);
      return;
    }
    case MsgType::kBarrier: {
      if (c.in_barrier) return protocol_error(c, "Barrier while already in a barrier");
      if (q.epoch != barrier_epoch_)
        return protocol_error(c, "entered barrier " + std::to_string(q.epoch) + " but the job is at barrier " +
                                     std::to_string(barrier_epoch_));
      c.in_barrier = true;
      ++barrier_arrived_;
      return maybe_release_barrier();
    }
    case MsgType::kFinalize:
      log(who(c) + " finalized");
      return send(c, MsgType::kFinalizeOk);
    default:
      return protocol_error(c, "unexpected frame type " + std::to_string(static_cast<int>(f.type)));
  }
}

void BootstrapServer::send(Conn& c, MsgType type, std::span<const std::byte> payload) {
  if (c.fd < 0) return;
  const auto frame = wire::make_frame(type, payload);
  c.out.insert(c.out.end(), frame.begin(), frame.end());
  flush(c);
}

void BootstrapServer::flush(Conn& c) {
  while (c.fd >= 0 && c.out_pos < c.out.size()) {
    const ssize_t n = ::send(c.fd, c.out.data() + c.out_pos, c.out.size() - c.out_pos, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;  // poll for POLLOUT
      log(who(c) + ": send failed: " + std::strerror(errno));
      ::close(c.fd);
      c.fd = -1;  // handle() closes the connection after this round
      return;
    }
    c.out_pos += static_cast<size_t>(n);
  }
  c.out.clear();
  c.out_pos = 0;
}

void BootstrapServer::close_conn(uint64_t id) {
  auto it = conns_.find(id);
  if (it == conns_.end()) return;
  Conn& c = it->second;
  if (c.fd >= 0) ::close(c.fd);
  if (c.in_barrier) --barrier_arrived_;  // it can no longer be released
  if (!c.waiting_key.empty()) {
    auto [b, e] = get_waiters_.equal_range(c.waiting_key);
    for (auto w = b; w != e; ++w) {
      if (w->second == id) {
        get_waiters_.erase(w);
        break;
      }
    }
  }
  if (c.rank >= 0 && rank_conn_[static_cast<size_t>(c.rank)] == id) rank_conn_[static_cast<size_t>(c.rank)] = 0;
  conns_.erase(it);
}

std::optional<std::string> BootstrapServer::deadlock(const std::vector<bool>& exited) const {
  std::string waiting;
  std::string gone;
  for (uint32_t r = 0; r < nranks_; ++r) {
    if (rank_conn_[r] == 0) {
      if (!exited[r]) return std::nullopt;  // still running: it may connect and help
      gone += (gone.empty() ? "" : ",") + std::to_string(r);
      continue;
    }
    const Conn& c = conns_.at(rank_conn_[r]);
    if (!waiting.empty()) waiting += ", ";
    if (c.in_barrier) {
      waiting += "rank " + std::to_string(r) + " in barrier " + std::to_string(barrier_epoch_);
    } else if (!c.waiting_key.empty()) {
      waiting += "rank " + std::to_string(r) + " for key " + quote_key(c.waiting_key);
    } else {
      return std::nullopt;  // connected and not blocked: it can still make progress
    }
  }
  if (waiting.empty()) return std::nullopt;
  return "bootstrap deadlock: " + waiting + " wait" +
         (gone.empty() ? std::string(" on each other") : "; ranks that left: " + gone);
}

}  // namespace tsurun
