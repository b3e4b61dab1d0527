// tsurun's side of the local bootstrap protocol (src/bootstrap/local/wire.hpp):
// a key-value store where GET waits for the key, and epoch-counted barriers,
// open only to connections that proved they hold the job secret
// (src/bootstrap/auth.hpp).  Unauthenticated connections are bounded
// in number and in frame size, and every refusal is counted.
// Driven by the launcher's single-threaded poll() loop; all sockets are
// non-blocking and replies are queued per connection.
#pragma once

#include <poll.h>

#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/auth.hpp"
#include "bootstrap/local/wire.hpp"

namespace tsurun {

class BootstrapServer {
 public:
  // At most this many connections wait to authenticate; a newer one pushes
  // the oldest out.
  static constexpr size_t kMaxPending = 256;

  BootstrapServer(uint32_t nranks, bool verbose, const tsu::bootstrap::auth::Secret& secret,
                  std::string job_id);
  ~BootstrapServer();
  BootstrapServer(const BootstrapServer&) = delete;
  BootstrapServer& operator=(const BootstrapServer&) = delete;

  // Creates the listening socket; the caller owns (and removes) the path.
  bool listen(const std::string& path, std::string& error);
  // Creates a TCP listener on ip:port (port 0: any); `bound` gets the port.
  bool listen_tcp(const std::string& ip, uint16_t port, uint16_t& bound, std::string& error);
  // A rank died and the job goes on without it: barriers stop waiting for it.
  void mark_lost(uint32_t rank);
  // Appends the pollfds to watch; handle() must get the same slice back.
  void add_pollfds(std::vector<pollfd>& fds);
  void handle(std::span<const pollfd> fds);

  // If no rank can make progress any more - every rank has either exited
  // (`exited[r]`) with its connection closed, or waits in a barrier or a get,
  // and at least one waits - describes who waits on what.  The launcher
  // then stops the job instead of hanging until a timeout.
  std::optional<std::string> deadlock(const std::vector<bool>& exited) const;

  // Refusals so far (failed proofs, protocol errors, dropped connections).
  struct Refusals {
    uint64_t failed_proofs = 0;
    uint64_t protocol_errors = 0;
    uint64_t dropped_pending = 0;  // unauthenticated, pushed out by newer ones
    uint64_t claimed_twice = 0;    // authenticated, but the rank was claimed before
    uint64_t abandoned = 0;        // closed by the client before authenticating
    uint64_t total() const { return failed_proofs + protocol_errors + dropped_pending + claimed_twice + abandoned; }
  };
  const Refusals& refusals() const { return refusals_; }
  // One line on the refusals, or "" if there were none.
  std::string refusal_summary() const;

 private:
  struct Conn {
    int fd = -1;
    int rank = -1;  // -1 until authenticated
    bool hello_seen = false;  // Challenge sent, Auth expected
    uint32_t hello_rank = 0;
    tsu::bootstrap::auth::Nonce client_nonce{}, server_nonce{};
    std::string peer;  // for the log: address or credentials
    tsu::bootstrap::wire::FrameDecoder decoder;
    std::vector<std::byte> out;  // queued replies
    size_t out_pos = 0;
    bool closing = false;  // error sent: flush, then close
    std::string waiting_key;  // non-empty while blocked in Get
    bool in_barrier = false;
  };

  void accept_all();
  void maybe_release_barrier();
  void on_readable(uint64_t id, Conn& c);
  void on_frame(uint64_t id, Conn& c, const tsu::bootstrap::wire::Frame& f);
  void on_hello(Conn& c, const tsu::bootstrap::wire::Request& q);
  void on_auth(uint64_t id, Conn& c, const tsu::bootstrap::wire::Request& q);
  void protocol_error(Conn& c, const std::string& why);
  // Reports a refusal unless too many were reported already.
  void report_refusal(const std::string& msg);
  void drop_oldest_pending();
  size_t pending_count() const;
  void send(Conn& c, tsu::bootstrap::wire::MsgType type, std::span<const std::byte> payload = {});
  void flush(Conn& c);
  void close_conn(uint64_t id);
  std::string who(const Conn& c) const;
  void log(const std::string& msg) const;

  const uint32_t nranks_;
  const bool verbose_;
  const tsu::bootstrap::auth::Secret secret_;
  const std::string job_id_;
  std::vector<bool> claimed_;  // a rank is claimed once per job
  Refusals refusals_;
  uint64_t reported_refusals_ = 0;
  int listen_fd_ = -1;
  uint64_t next_id_ = 1;
  std::map<uint64_t, Conn> conns_;
  std::vector<uint64_t> poll_ids_;  // connection id of each pollfd after the listener
  std::vector<uint64_t> rank_conn_;  // live connection of each rank, 0: none
  std::map<std::string, std::vector<std::byte>, std::less<>> kv_;
  std::multimap<std::string, uint64_t, std::less<>> get_waiters_;  // key -> connection
  uint64_t barrier_epoch_ = 0;
  uint32_t barrier_arrived_ = 0;
  std::vector<bool> lost_;
  uint32_t lost_count_ = 0;
};

}  // namespace tsurun
