// tsurun's side of the local bootstrap protocol (src/bootstrap/local/wire.hpp):
// a key-value store where GET waits for the key, and epoch-counted barriers.
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

#include "bootstrap/local/wire.hpp"

namespace tsurun {

class BootstrapServer {
 public:
  BootstrapServer(uint32_t nranks, bool verbose);
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

 private:
  struct Conn {
    int fd = -1;
    int rank = -1;  // -1 until Hello
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
  void protocol_error(Conn& c, const std::string& why);
  void send(Conn& c, tsu::bootstrap::wire::MsgType type, std::span<const std::byte> payload = {});
  void flush(Conn& c);
  void close_conn(uint64_t id);
  std::string who(const Conn& c) const;
  void log(const std::string& msg) const;

  const uint32_t nranks_;
  const bool verbose_;
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
