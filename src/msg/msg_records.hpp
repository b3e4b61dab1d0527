// What the files defining MsgLayer's members share: the wire formats, and
// the records of receives, unexpected messages and rendezvous in flight.
// (msg_layer.cpp: setup, the rendezvous tables, peer loss; msg_send.cpp: the
// send path; msg_receive.cpp: matching and the posted queue;
// msg_rendezvous.cpp: rendezvous transfers.)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <vector>

#include "msg/msg_layer.hpp"
#include "runtime/runtime.hpp"
#include "transport/transport.hpp"
#include "util/record_pool.hpp"

namespace tsu::msg {

// Wire formats (MessageHeader):
//   eager   args[0] tag; payload = data
//   rts     args[0] tag, [1] length, [2] sender address, [3] sender cookie;
//           flags bit 0: the address is an offset in the sender's shared
//           segment flags>>8 (else a pointer in the sender's process);
//           bit 1: the payload comes as a bulk payload keyed by the cookie's
//           low 32 bits (BulkTransfer::bulk_send), no CTS/DATA and no FIN
//           unless the receiver cannot take it
//   fin     args[0] cookie, [1] status (receiver -> sender, rendezvous done)
//   scpoke  no arguments (sender -> receiver: a single-copy record waits in
//           your posted queue; only where the route cannot wake the engine)
//   cts     args[0] sender cookie, [1] receiver cookie (NetPull), [2] bytes
//           wanted (receiver -> sender, off-node rendezvous: "send it"); a
//           receive that cannot take the data answers with a FIN instead
//   data    args[0] receiver cookie, [1] offset; payload = a piece of the
//           sender's buffer (sender -> receiver, after a cts)
inline constexpr uint16_t kRtsShared = 1;
inline constexpr uint16_t kRtsBulk = 2;

// True when this process reaches `rank`'s memory (self or a node peer);
// false for ranks on other nodes, reached by messages only.
inline bool memory_reachable(runtime::Runtime& rt, uint32_t rank) {
  return rt.memory_route(rank);
}

struct MsgLayer::Local {
  uint64_t id;
  uint32_t src;
  uint64_t tag, mask;
  void* buf;
  std::size_t cap;
  tsu_msg_status_t* status;
  tsu_cb_t cb;
  int64_t seg;  // shared segment holding buf, or -1
  uint64_t offset;
  bool watched = false;  // holds a PeerLoss::watch_peer on src until complete()

  // One per receive: pooled (util/record_pool.hpp), not malloc'd and freed
  // on every message's path.
  static void* operator new(std::size_t, const std::nothrow_t&) noexcept {
    return util::RecordPool<Local>::allocate();
  }
  static void operator delete(void* p) noexcept { util::RecordPool<Local>::deallocate(p); }
};

struct MsgLayer::Unexpected {
  uint32_t src;
  uint64_t tag;
  std::size_t len;
  bool rndv;
  uint16_t flags;
  uint64_t addr, cookie;
  std::vector<std::byte> data;
};

// A rendezvous send, named by a cookie in its RTS and in the receiver's FIN
// or CTS (sends_; net_mu_ also orders the sending thread before the handler).
struct MsgLayer::SendReq {
  tsu_cb_t cb;
  const std::byte* buf;  // the user's buffer (off-node: sent on CTS)
  std::size_t len;
  uint32_t dst;
};

// Off-node rendezvous, receiver side: the matched receive and how much of
// the `want` bytes arrived.  DATA pieces come in order (per-pair order), so
// the last one completes it.
struct MsgLayer::NetPull {
  std::unique_ptr<Local> l;
  uint32_t src;
  uint64_t tag;
  std::size_t len, want, got;
  // A bulk payload longer than the receive: taken whole here, `want` bytes
  // copied out (providers differ in how, or whether, they complete a
  // truncated tagged receive: shm's never did, nor rxm's of zero bytes).
  std::unique_ptr<std::byte[]> bounce;
  // A bulk receive: the sender's cookie, for the FIN that fails its request
  // when this receive fails (0: not a bulk receive).
  uint64_t sender_cookie = 0;
};

}  // namespace tsu::msg
