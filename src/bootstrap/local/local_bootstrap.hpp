// Concrete bootstraps behind make_from_environment():
//   LocalBootstrap      - client of tsurun's service (TSU_BOOTSTRAP=unix:PATH),
//                         protocol in wire.hpp.
//   SingletonBootstrap  - a job of one rank, started without a launcher.
// All methods are thread-safe (one mutex per object serialises them), never
// throw, and keep the reason for the last failure in last_error().
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/auth.hpp"
#include "bootstrap/local/wire.hpp"

namespace tsu::bootstrap {

class LocalBootstrap final : public Bootstrap {
 public:
  // Connects to the Unix socket at `path` and authenticates as this rank
  // with the job secret (mutually: the service proves it first).  On failure
  // returns nullptr with TSU_ERR_BOOTSTRAP and the reason in `error`.
  static std::unique_ptr<LocalBootstrap> connect(const std::string& path, uint32_t rank,
                                                 uint32_t size, const auth::Secret& secret,
                                                 tsu_status_t& status, std::string& error);
  // The same protocol over TCP (tsurun --hosts): host is an IPv4 address or
  // a name.  Retries a refused connection for a few seconds.
  static std::unique_ptr<LocalBootstrap> connect_tcp(const std::string& host, uint16_t port,
                                                     uint32_t rank, uint32_t size,
                                                     const auth::Secret& secret,
                                                     tsu_status_t& status, std::string& error);
  ~LocalBootstrap() override;
  std::string reachable_address() const override { return reachable_; }
  LocalBootstrap(const LocalBootstrap&) = delete;
  LocalBootstrap& operator=(const LocalBootstrap&) = delete;

  uint32_t rank() const override { return rank_; }
  uint32_t size() const override { return size_; }
  tsu_status_t put(std::string_view key, std::span<const std::byte> value) override;
  tsu_status_t get(std::string_view key, std::vector<std::byte>& value) override;
  tsu_status_t barrier() override;
  tsu_status_t finalize() override;
  Traffic traffic() const override {
    std::lock_guard lock(mu_);
    return traffic_;
  }

  // Reason for the last non-OK status.  Read it from the thread that got the
  // error, before calling another method.
  const std::string& last_error() const { return last_error_; }

 private:
  LocalBootstrap(int fd, uint32_t rank, uint32_t size) : fd_(fd), rank_(rank), size_(size) {}
  // The handshake (wire.hpp); `retry` says whether a failure may be
  // transient (the connection closed rather than an Error from the service).
  static std::unique_ptr<LocalBootstrap> hello(int fd, uint32_t rank, uint32_t size,
                                               const auth::Secret& secret, tsu_status_t& status,
                                               std::string& error, bool& retry);
  std::string reachable_;  // local IPv4 address of a TCP connection
  // Sends one request and waits for its reply; fails unless the reply has
  // type `expect`.  Caller holds mu_.
  tsu_status_t call(wire::MsgType type, std::span<const std::byte> payload, wire::MsgType expect,
                    wire::Frame& reply);
  tsu_status_t fail(std::string reason);  // marks the connection unusable
  bool send_all(std::span<const std::byte> b);
  bool recv_frame(wire::Frame& out);

  mutable std::mutex mu_;
  int fd_;
  Traffic traffic_;
  const uint32_t rank_;
  const uint32_t size_;
  uint64_t barrier_epoch_ = 0;
  bool broken_ = false;  // after an I/O or protocol error, or finalize
  bool refused_ = false;  // the service answered Error
  std::string last_error_;
  wire::FrameDecoder decoder_;
  // A barrier waits for its BarrierDone without holding mu_, so another
  // thread (the progress thread looking up a peer's address on first
  // contact) can use the connection meanwhile: a BarrierDone that such a
  // call reads before its own reply is left here for the barrier.
  bool barrier_waiting_ = false;  // mu_
  bool barrier_done_ = false;     // mu_
  uint64_t barrier_done_epoch_ = 0;
  // Takes a BarrierDone the barrier waits for (true), else leaves `f`.
  bool keep_barrier_done(const wire::Frame& f);
};

class SingletonBootstrap final : public Bootstrap {
 public:
  uint32_t rank() const override { return 0; }
  uint32_t size() const override { return 1; }
  tsu_status_t put(std::string_view key, std::span<const std::byte> value) override;
  // A key nobody published can never appear in a job of one, so this fails
  // at once instead of hanging.
  tsu_status_t get(std::string_view key, std::vector<std::byte>& value) override;
  tsu_status_t barrier() override { return TSU_OK; }
  tsu_status_t finalize() override { return TSU_OK; }
  const std::string& last_error() const { return last_error_; }

 private:
  std::mutex mu_;
  std::map<std::string, std::vector<std::byte>, std::less<>> kv_;
  std::string last_error_;
};

}  // namespace tsu::bootstrap
