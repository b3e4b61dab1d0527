// One NFQUEUE binding through libnetfilter_queue: hands queued packet ids to a
// callback and takes ACCEPT verdicts.  Only packet metadata is copied to user
// space; the holder never looks at payloads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

struct nfq_handle;
struct nfq_q_handle;
struct nfq_data;
struct nfgenmsg;

namespace tsu::nfq {

class KernelQueue {
 public:
  using PacketHandler = std::function<void(std::uint32_t packet_id)>;

  // Binds queue `number`; on failure valid() is false and error() says why.
  // `kernel_backlog` bounds packets awaiting a verdict inside the kernel;
  // beyond it (or if the netlink socket overflows) the kernel accepts packets
  // instead of dropping them (fail open).
  KernelQueue(std::uint16_t number, std::uint32_t kernel_backlog, PacketHandler on_packet);
  ~KernelQueue();
  KernelQueue(const KernelQueue&) = delete;
  KernelQueue& operator=(const KernelQueue&) = delete;

  bool valid() const { return queue_ != nullptr; }
  const std::string& error() const { return error_; }
  int fd() const;

  // Reads every message waiting on the socket without blocking, calling the
  // handler once per packet.  False on a socket error other than overflow.
  bool read_pending();
  bool accept(std::uint32_t packet_id);

  std::uint64_t socket_overflows() const { return socket_overflows_; }
  std::uint64_t verdict_errors() const { return verdict_errors_; }

 private:
  static int on_message(nfq_q_handle* queue, nfgenmsg* msg, nfq_data* data, void* self);

  nfq_handle* handle_ = nullptr;
  nfq_q_handle* queue_ = nullptr;
  PacketHandler on_packet_;
  std::string error_;
  std::uint64_t socket_overflows_ = 0;
  std::uint64_t verdict_errors_ = 0;
};

}  // namespace tsu::nfq
