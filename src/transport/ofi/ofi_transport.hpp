// Ranks on other nodes through libfabric: one reliable datagram endpoint
// (FI_EP_RDM) per rank, of the provider the job names (TSU_OFI_PROVIDER;
// tcp;ofi_rxm by default).
//
// Messages.  Each message leaves as one fi_send (fi_inject when it fits the
// provider's inject size) of a small prefix (source rank, job tag), the
// message header and the payload, copied into a send buffer before the call
// returns; receive buffers of the largest message are kept posted and
// reposted after their handler ran.  Per-pair order is the transport's own:
// each message carries a per-pair sequence number and one that completes
// early is held until its predecessors ran.  (tcp;ofi_rxm advertises
// FI_ORDER_SAS, yet completes a rendezvous-sized message after the eager ones
// sent behind it; the conformance suite's long AMs caught it.)
//
// Watched peers (watch_peer: a rank this one waits on, until unwatch_peer
// says nothing waits any more): poll inserts the peer's address and, while
// the peer is watched and not lost, pings it when it has been silent for
// TSU_OFI_KEEPALIVE; the peer answers each ping.  Pings and
// answers are a bare prefix (reserved = kPing / kPong, no sequence number):
// the receiving transport consumes them without dispatching and without
// touching the pair's sequence.  Any message from the peer counts as heard;
// one silent for TSU_OFI_PEER_TIMEOUT is lost, as is one a ping to fails.
//
// Bulk payloads (ofi_bulk.cpp, BulkTransfer::bulk_send): a large tagged
// message's payload is one fi_tsend / fi_trecv pair where the provider offers
// FI_TAGGED without local registration, tagged (sender rank, key); tsunagi's
// own matching still decides which receive takes which message.
//
// RMA: native (ofi_rma.hpp) where the provider offers FI_RMA without local
// registration: the main segment is registered (register_memory) and put/get
// become fi_write/fi_read.  Atomics on TSU_SEG_NIC_ATOMICS segments (also
// registered) become libfabric atomics where the endpoint, opened with
// FI_ATOMIC, accepts every one (nic_atomics).  Other atomics, third-party
// copies and the rest go through the message emulation
// (transport/message_rma); the target's CPU executes those atomics (seed
// 002: one executor per word, MemoryRegion::atomics).
//
// Batches: between batch_begin and batch_end (one executor batch) sends,
// writes and reads are staged and posted at batch_end in order, FI_MORE on
// all but the last; small writes add FI_INJECT (still delivery complete).
//
// Addresses: none at init; a peer's endpoint name is fetched from the
// bootstrap and inserted (fi_av_insert) on first contact (peer_address).
//
// Progress is the engine's: poll() reads the completion queue (providers
// with manual progress advance only then); the engine sleeps on the queue's
// wait descriptor after fi_trywait, or polls every 200 us where the provider
// has none, so a passive target keeps serving.  Every libfabric error
// becomes a tsunagi status; a send that fails for a peer declares it lost.
// All objects are closed in the destructor (finalize, or a failed init).
#pragma once

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "transport/ofi/ofi_atomic.hpp"
#include "transport/ofi/ofi_config.hpp"
#include "transport/bulk_transfer.hpp"
#include "transport/messaging.hpp"
#include "transport/peer_loss.hpp"
#include "transport/peer_watch.hpp"
#include "transport/rma.hpp"
#include "transport/transport.hpp"

namespace tsu::transport::ofi {

struct FabricLibrary;  // fabric_library.hpp: libfabric, loaded on first use

// What libfabric hands back with a completion (FI_CONTEXT mode: the provider
// owns the fi_context while the operation is in flight).
struct OpContext {
  fi_context ctx;  // first: a completion's op_context points here
  enum Kind : uint8_t { kRecv, kSend, kRma } kind = kSend;
};
// A native RMA operation's context (ofi_rma.cpp owns them): `done` runs in
// progress context when the operation completed or failed.
struct RmaContext : OpContext {
  void (*done)(RmaContext* self, tsu_status_t status) noexcept = nullptr;
  // The peer it went to (set when posted): its successful completion shows
  // that peer alive to the keep-alive watch.
  uint32_t peer = UINT32_MAX;
};

// What a peer needs to address a registered segment (MemoryKey's bytes).
struct WireKey {
  uint64_t key;   // the memory region's key
  uint64_t base;  // address of offset 0 as the provider expects it (0: offsets)
  uint64_t size;  // the segment's bytes (checked before any RMA leaves)
};

// What precedes the message header on the wire.
struct WirePrefix {
  uint32_t src_rank;
  uint32_t job_tag;  // from the job secret: traffic of other jobs is dropped
  uint32_t seq;      // per (sender, receiver) pair, from 0; in a keep-alive:
                     // the sender's next sequence number to the receiver + 1
                     // (0: not known)
  uint32_t reserved;  // 0: a message; kPing / kPong / kLost: control (prefix only)
};
inline constexpr uint32_t kPing = 0x50494e47;  // "PING"
inline constexpr uint32_t kPong = 0x504f4e47;  // "PONG"
// "You are lost to me": the sender has declared the receiver lost while the
// receiver may be alive (a message of the receiver's went missing or arrived
// garbled).  Sent when it declares it, and in answer to every later ping.
inline constexpr uint32_t kLost = 0x4c4f5354;  // "LOST"

static_assert(sizeof(WirePrefix) == 16);

class OfiTransport final : public Transport,
                           public Messaging,
                           public NativeRma,
                           public BulkTransfer,
                           public PeerLoss {
 public:
  OfiTransport(uint32_t rank, uint32_t size, uint32_t job_tag, const OfiConfig& cfg);
  ~OfiTransport() override;
  OfiTransport(const OfiTransport&) = delete;
  OfiTransport& operator=(const OfiTransport&) = delete;

  // Finds the provider, opens fabric, domain, queues and the endpoint, posts
  // the receive buffers.  On failure the reason is in `error`.
  tsu_status_t open(std::string& error);
  // This endpoint's address (fi_getname), published through the bootstrap.
  const std::vector<std::byte>& local_name() const noexcept { return name_; }
  // A peer's address (from its published name).
  tsu_status_t add_peer(uint32_t rank, const std::vector<std::byte>& name, std::string& error);
  // Where a peer's name comes from on first contact (the bootstrap): no
  // address is inserted at init; the first send or RMA to a rank fetches
  // its name and inserts it (fi_av_insert).  False: the rank has none.
  using NameResolver = std::function<bool(uint32_t rank, std::vector<std::byte>& name)>;
  void set_name_resolver(NameResolver resolve) { resolve_ = std::move(resolve); }
  const char* provider_name() const noexcept;
  std::size_t rxm_eager_plan();

  // Native RMA (ofi_rma.hpp).  Whether it is on: the provider offers FI_RMA
  // without local registration and TSU_OFI_RMA says native.
  bool native_rma() const noexcept { return native_rma_; }
  std::size_t max_rma() const noexcept { return max_rma_; }
  // Largest piece one native put or get is posted in (TSU_OFI_RMA_PIECE).
  std::size_t rma_piece() const noexcept { return cfg_.rma_piece; }
  // `len` bytes from local `buf` to `rank`'s memory (or back, for read) at
  // the provider address `raddr` under `key`; completes through ctx->done.
  // TSU_EAGAIN: no room now.
  tsu_status_t rma_write(uint32_t rank, const void* buf, std::size_t len, uint64_t raddr,
                         uint64_t key, RmaContext* ctx) noexcept;
  tsu_status_t rma_read(uint32_t rank, void* buf, std::size_t len, uint64_t raddr, uint64_t key,
                        RmaContext* ctx) noexcept;
  // Native RMA turned out unsupported (TSU_ERR_UNSUPPORTED from rma_* or a
  // completion): one request went to the message emulation instead.
  void count_rma_fallback() noexcept { rma_fallbacks_.fetch_add(1, std::memory_order_relaxed); }
  // One NIC atomic on `rank`'s word at provider address `raddr` under `key`
  // (fi_atomicmsg / fi_fetch_atomicmsg / fi_compare_atomicmsg, delivery
  // complete).  operand, compare and result hold one value of the
  // datatype and stay valid until ctx->done runs.  Staged operations are
  // posted first (order).  TSU_ERR_UNSUPPORTED: the provider refused it
  // (ENOSYS / EOPNOTSUPP); TSU_EAGAIN: no room now.
  tsu_status_t atomic(uint32_t rank, const FiAtomic& a, const void* operand,
                      const void* compare, void* result, uint64_t raddr, uint64_t key,
                      RmaContext* ctx) noexcept;
  // A NIC atomic the provider refused (at the call or in its completion).
  void count_atomic_refused() noexcept {
    atomic_refused_.fetch_add(1, std::memory_order_relaxed);
  }
  bool nic_atomics(tsu_atype_t type, tsu_aop_t op) const noexcept override;

  // ---- BulkTransfer (ofi_bulk.cpp): fi_tsendmsg / fi_trecvmsg ----------------
  std::size_t bulk_max(uint32_t peer) const noexcept override;
  tsu_status_t bulk_send(uint32_t dst, uint32_t key, const void* buf, std::size_t len,
                         Done done, void* ctx, uint64_t cookie) noexcept override;
  tsu_status_t bulk_recv(uint32_t src, uint32_t key, void* buf, std::size_t len, Done done,
                         void* ctx, uint64_t cookie) noexcept override;

  // ---- NativeRma (ofi_memory.cpp), offered when native_rma() ----------------
  std::unique_ptr<RmaProtocol> make_rma(RmaHost& host) noexcept override;
  tsu_status_t register_memory(const MemoryRegion& region, MemoryKey& key,
                               std::string& error) noexcept override;
  void deregister_memory(tsu_seg_t seg) noexcept override;

  const char* name() const noexcept override { return "ofi"; }
  Parts parts() noexcept override {
    Parts p;
    p.messages = this;
    p.rma = native_rma_ ? this : nullptr;  // otherwise the message emulation
    p.bulk = this;
    p.peer_loss = this;
    return p;
  }

  // ---- Messaging (ofi_send.cpp) ---------------------------------------------------
  std::size_t max_message_payload() const noexcept override { return cfg_.max_message; }
  std::size_t eager_max(uint32_t peer) const noexcept override {
    return peer < size_ && peer != rank_ ? eager_max_ : 0;
  }
  tsu_status_t send_message(uint32_t dst, const core::MessageHeader& header,
                            const void* payload) noexcept override;
  // Between these (one executor batch) sends, writes and reads are staged
  // and posted at batch_end, each with FI_MORE but the last.
  void batch_begin() noexcept override;
  void batch_end() noexcept override;

  // ---- Progress (ofi_completions.cpp) -------------------------------------------
  std::size_t poll(const core::MessageHandlerTable& handlers) noexcept override;
  bool prepare_sleep() noexcept override;
  bool busy_polling() const noexcept override { return !cfg_.cq_wait; }
  int wait_fd() const noexcept override { return wait_fd_; }
  uint64_t max_sleep_ns() const noexcept override {
    const uint64_t base = wait_fd_ >= 0 ? UINT64_MAX : 200'000;
    // Watched peers: wake to ping them and to time them out.
    if (watched_now_.load(std::memory_order_relaxed) != 0)
      return std::min<uint64_t>(base, cfg_.keepalive_ns / 2 + 1);
    return base;
  }
  // ---- PeerLoss (ofi_liveness.cpp) ----------------------------------------------
  // Start and end keep-alives to `rank` in the next poll (never block:
  // atomics; counted, see PeerWatches).
  void watch_peer(uint32_t rank) noexcept override;
  void unwatch_peer(uint32_t rank) noexcept override;
  void set_peer_lost_handler(LostFn fn, void* ctx) noexcept override {
    lost_fn_ = fn;
    lost_ctx_ = ctx;
  }
  bool is_peer_lost(uint32_t rank) const noexcept override {
    return rank < size_ && lost_[rank].load(std::memory_order_acquire);
  }

  // Puts and gets this small go over messages (TSU_OFI_RMA_MESSAGE_MAX).
  std::size_t rma_message_max() const noexcept { return cfg_.rma_message_max; }
  void print_stats(std::FILE* f) const noexcept override;

 private:
  // One buffer with its libfabric context (FI_CONTEXT mode: the provider
  // owns the fi_context while the operation is in flight).
  struct Buffer : OpContext {
    uint32_t dst = 0;  // sends: the peer (for errors)
    std::byte* data = nullptr;
  };
  static constexpr std::size_t kPrefix = sizeof(WirePrefix) + sizeof(core::MessageHeader);
  // An operation accepted during a batch and not yet handed to the provider.
  struct Staged {
    enum Kind : uint8_t { kSend, kWrite, kRead, kTagSend, kTagRecv } kind = kSend;
    uint32_t rank = 0;
    fi_addr_t to = FI_ADDR_UNSPEC;
    void* buf = nullptr;
    std::size_t len = 0;
    uint64_t raddr = 0, key = 0;  // kTagSend / kTagRecv: raddr is the tag
    uint64_t flags = 0;
    OpContext* ctx = nullptr;  // the send's Buffer or the RMA's context
  };
  // Staged operations beyond this many are posted at once (FI_MORE but the
  // last), without waiting for batch_end.
  static constexpr std::size_t kMaxStaged = 64;

  // open's steps, in order (ofi_setup.cpp); each says in `error` why it failed.
  bool step_ok(int rc, const char* what, std::string& error) const;  // rc 0, else `error` set
  tsu_status_t find_provider(std::string& error);          // fi_getinfo: info_
  tsu_status_t adopt_provider_limits(std::string& error);  // sizes and modes from info_
  bool open_endpoint(std::string& error);  // fabric, domain, queue, address vector, endpoint
  void find_nic_atomics();                 // nic_valid_
  bool read_local_name(std::string& error);       // name_ (and the shm region's)
  tsu_status_t make_buffers(std::string& error);  // the slab; the receives posted
  // poll's steps (ofi_completions.cpp).  read_queue takes mu_: posts what
  // waits in retry_, reposts receive buffers, reads a batch of completions
  // (-FI_EAVAIL: an error entry or a faulted RMA, in failed_*: look again)
  // and takes the ranks newly lost.
  ssize_t read_queue(fi_cq_msg_entry* entries, RmaContext*& failed_rma,
                     tsu_status_t& failed_status, std::vector<uint32_t>& lost) noexcept;
  // One successful completion: an RMA's callback, a send buffer back, or a
  // received buffer's contents run (`len` bytes of it).
  void complete(const core::MessageHandlerTable& handlers, OpContext* c, std::size_t len,
                bool watching, uint64_t now) noexcept;
  void receive_control(Buffer& b, uint64_t now) noexcept;  // a keep-alive or kLost notice
  void receive_messages(const core::MessageHandlerTable& handlers, Buffer& b, std::size_t len,
                        uint64_t now) noexcept;
  tsu_status_t post_recv(Buffer& b) noexcept;
  // Hands one staged operation to the provider (mu_ held); `more`: FI_MORE.
  ssize_t post(const Staged& s, uint64_t more, bool staged) noexcept;
  // Posts staged_ (then retry_ first, in order): FI_MORE on all but the last.
  // An operation the provider has no room for waits in retry_ with those
  // behind it (posted again by poll); one that fails is failed (mu_ held).
  void flush_staged() noexcept;
  void post_list(std::deque<Staged>& list) noexcept;
  // Packs the staged sends right behind list.front() (a send) that go to the
  // same rank into its buffer, while they fit: one provider send carries
  // many tsunagi messages (mu_ held).
  void bundle_sends(std::deque<Staged>& list) noexcept;
  // A staged operation the provider refused: an RMA's callback runs in the
  // next poll with the status; a send's peer is lost (mu_ held).
  void fail_staged(const Staged& s, ssize_t rc) noexcept;
  // The peer's libfabric address (FI_ADDR_UNSPEC: none), inserted on first
  // contact through the resolver.  Caller does not hold mu_ (the lookup may
  // wait for the bootstrap service).
  fi_addr_t peer_address(uint32_t rank) noexcept;
  tsu_status_t rma(bool write, uint32_t rank, void* buf, std::size_t len, uint64_t raddr,
                   uint64_t key, RmaContext* ctx) noexcept;
  // What every RMA and NIC atomic checks first (mu_ not held): the rank is
  // in the job, not lost, and addressable (`to`); marks ctx as an RMA op.
  tsu_status_t rma_peer(uint32_t rank, RmaContext* ctx, fi_addr_t& to) noexcept;
  // TSU_OFI_TEST_FAULT's "fails in its completion": queued for the next
  // poll (mu_ held).
  tsu_status_t fail_in_completion(RmaContext* ctx) noexcept;
  // TSU_EAGAIN after one fi_cq_read: manual providers progress in it.
  tsu_status_t nudge_eagain() noexcept;
  // An RMA or atomic post's rc as a status (mu_ held): EAGAIN watches the
  // backpressuring peer, anything unexpected is logged as `what` failing,
  // and one that may be the peer's death is held (hold_until_peer_known:
  // TSU_OK, ctx's callback tells).
  tsu_status_t post_status(ssize_t rc, uint32_t rank, const char* what,
                           RmaContext* ctx) noexcept;
  // Runs one well-formed message and any held ones it unblocks.
  void deliver(const core::MessageHandlerTable& handlers, const WirePrefix& prefix,
               const std::byte* msg, std::size_t len) noexcept;
  tsu_status_t status_of(ssize_t rc) const noexcept;
  // Reads one error completion (mu_ held); an RMA one is returned to run
  // its callback once the lock is released.
  RmaContext* handle_error_entry(tsu_status_t& rma_status) noexcept;
  // (mu_ held.)  tell_it: the rank may be alive (a message of its went
  // missing or arrived garbled): it gets a kLost notice, so that it fails
  // what waits on this rank rather than wait for ever (see kLost).
  void declare_lost(uint32_t rank, const char* why = "a send to it failed",
                    bool tell_it = false) noexcept;
  // (mu_ held.)  Holds a refused operation in doubtful_ until its peer's
  // fate is known; false: not held (the peer is lost already, or no memory).
  bool hold_until_peer_known(RmaContext* ctx, uint32_t rank, tsu_status_t status) noexcept;
  // Poller, mu_ held: moves the doubtful operations whose peer is lost or
  // was heard from to faulted_; settleable: whether any would move.
  void settle_doubtful() noexcept;
  bool doubtful_settleable() const noexcept;
  // Watches a rank the provider answered -FI_EAGAIN for (mu_ held), once
  // until release_backpressured ends it.
  void watch_backpressured(uint32_t rank) noexcept;
  // Poller, mu_ held: ends the send-side watches of ranks heard from since
  // they backpressured with nothing of theirs left in retry_, and of lost ones.
  void release_backpressured() noexcept;
  // Keep-alives (poller only): picks up watches that started or ended, pings
  // silent watched peers, declares lost those silent past the timeout.
  void keepalive(uint64_t now) noexcept;
  void stop_watching(uint32_t rank) noexcept;  // poller only: out of watching_
  // A ping or its answer (a bare prefix) to `dst` (mu_ held).  False: not
  // sent (no room now; the next interval tries again).
  bool send_control(uint32_t dst, fi_addr_t to, uint32_t kind) noexcept;
  // Bulk payloads (ofi_bulk.cpp).  One per bulk_send / bulk_recv accepted,
  // owned by the provider while posted, freed by bulk_done.
  struct BulkContext;
  static void bulk_done(RmaContext* ctx, tsu_status_t status) noexcept;
  tsu_status_t post_bulk(Staged::Kind kind, uint32_t peer, uint32_t key, void* buf,
                         std::size_t len, Done done, void* ctx, uint64_t cookie) noexcept;
  // `rank` is lost (mu_ held): its posted receives are cancelled (their
  // completions say TSU_ERR_PEER_LOST), so that a provider that still
  // matched one later cannot write into a buffer given back to the user.
  void cancel_bulk(uint32_t rank) noexcept;
  void free_bulk_pending() noexcept;  // the endpoint is closed: nothing completes any more

  // The provider loses messages unless each is a send with a completion
  // (ofi_rxd before libfabric 2.4: see the definition).
  bool messages_need_completions() const noexcept;

  const uint32_t rank_, size_;
  const uint32_t job_tag_;
  OfiConfig cfg_;
  std::size_t buffer_size_ = 0;
  std::size_t eager_max_ = 0;  // eager tagged payloads up to this (0: TSU_EAGER_MAX)
  // TSU_OFI_EAGER_MAX=auto over tcp;ofi_rxm: 32 KiB.  Below it eager beats
  // the bulk path; 64 KiB eager is no faster, and a higher rxm limit slows
  // larger messages (docs/ofi.md, "Why 32 KiB").
  static constexpr std::size_t kRxmTcpEagerAuto = 32u << 10;
  // FI_OFI_RXM_EAGER_LIMIT set while the endpoint opens ("": none).
  std::string rxm_eager_limit_request_;
  std::size_t inject_size_ = 0;
  // The largest message sent as an inject (no completion, no buffer held):
  // inject_size_, or 0 where the provider cannot take injects safely
  // (messages_need_completions()).
  std::size_t msg_inject_size_ = 0;

  const FabricLibrary* lib_ = nullptr;  // set by open()
  fi_info* info_ = nullptr;
  fid_fabric* fabric_ = nullptr;
  fid_domain* domain_ = nullptr;
  fid_cq* cq_ = nullptr;
  fid_av* av_ = nullptr;
  fid_ep* ep_ = nullptr;
  fid_mr* mr_ = nullptr;  // the buffer slab, where the provider wants local registration
  void* desc_ = nullptr;
  int wait_fd_ = -1;
  std::vector<std::byte> name_;
  std::string shm_name_;  // the shm provider's /dev/shm region ("": none)
  bool native_rma_ = false;
  bool virt_addr_ = false;  // FI_MR_VIRT_ADDR: RMA addresses are virtual addresses
  bool prov_key_ = false;   // FI_MR_PROV_KEY: the provider picks keys
  uint64_t rma_flags_ = 0;  // completion semantics of fi_writemsg / fi_readmsg
  std::size_t max_rma_ = 0;
  // Per (type, op): the endpoint (opened with FI_ATOMIC) accepts it
  // (fi_atomicvalid / fi_fetch_atomicvalid / fi_compare_atomicvalid).
  bool nic_valid_[TSU_TYPE_DOUBLE + 1][TSU_AOP_XOR + 1] = {};
  bool atomic_posted_ = false;  // TSU_OFI_TEST_FAULT=atomic_enosys_late (under mu_)
  std::map<tsu_seg_t, fid_mr*> regions_;  // registered segments (under mu_)
  bool bulk_ = false;  // FI_TAGGED without local registration, TSU_OFI_BULK on
  std::set<BulkContext*> bulk_pending_;  // posted or staged (under mu_)

  // Serialises endpoint and queue calls: sends come from any thread, poll
  // from the engine.  Handlers run without it (they may send).
  mutable std::mutex mu_;
  std::unique_ptr<std::byte[]> slab_;  // rx buffers then tx buffers
  std::vector<Buffer> buffers_;
  std::vector<Buffer*> free_tx_;
  std::vector<Buffer*> unposted_;  // receive buffers waiting to be posted again
  // Peers' addresses, FI_ADDR_UNSPEC until added: written once under mu_
  // (after fi_av_insert), read without it (release/acquire).
  std::unique_ptr<std::atomic<fi_addr_t>[]> peers_;
  NameResolver resolve_;
  std::vector<uint32_t> send_seq_;  // next sequence number to each peer (under mu_)
  std::vector<uint32_t> recv_seq_;  // next expected from each peer (poller only)
  // Messages that completed before their predecessors, by (src << 32 | seq):
  // poller only.
  std::map<uint64_t, std::vector<std::byte>> held_;
  std::vector<std::byte> held_tmp_;  // the held message being run
  // Gaps in a peer's sequence: a message held behind a missing one, or a
  // keep-alive saying more was sent than arrived.  A gap still open after
  // TSU_OFI_PEER_TIMEOUT means the provider lost a message (it acknowledged
  // the send): the peer is declared lost rather than every later request
  // waiting for ever.  Poller only; empty unless a provider misbehaves.
  struct Gap {
    uint64_t since_ns;  // when recv_seq_ last moved while the gap was open
    uint32_t need_seq;  // closed once recv_seq_ reaches it
    uint32_t at_seq;    // recv_seq_ at since_ns
  };
  std::map<uint32_t, Gap> gaps_;
  uint64_t last_gap_check_ns_ = 0;
  void note_gap(uint32_t src, uint32_t need_seq) noexcept;
  void check_gaps() noexcept;
  // TSU_OFI_TEST_FAULT=message_lost: messages sent so far (under mu_).
  uint64_t fault_sends_ = 0;
  std::unique_ptr<std::atomic<bool>[]> lost_;
  LostFn lost_fn_ = nullptr;
  void* lost_ctx_ = nullptr;
  std::vector<uint32_t> newly_lost_;
  // Watched peers: counted by watch_peer / unwatch_peer (any thread), the
  // changes picked up by poll.
  PeerWatches watches_;
  std::atomic<uint32_t> watched_now_{0};  // written by the poller: watching_.size()
  std::vector<uint32_t> watching_;   // poller only: watched, not lost
  std::vector<uint32_t> watch_slot_; // poller only: index in watching_, or kNotWatching
  static constexpr uint32_t kNotWatching = UINT32_MAX;
  std::vector<uint64_t> heard_ns_;   // poller only: last message from each peer
  // Poller only: when the peer's current watch was picked up.  Silence counts
  // from the later of this and heard_ns_ (what was heard, or not, while
  // nothing watched the peer does not count).
  std::vector<uint64_t> watch_since_ns_;
  std::vector<uint64_t> pinged_ns_;  // poller only: last ping to each peer
  uint64_t next_tick_ns_ = 0;        // poller only
  uint64_t last_keepalive_ns_ = 0;   // poller only: the last keepalive() call
  // Send-side watches (watch_backpressured), under mu_: which ranks hold one,
  // since when, and the list of them.
  std::vector<uint8_t> backpressured_;
  std::vector<uint64_t> backpressured_ns_;
  std::vector<uint32_t> backpressured_list_;
  // RMA to fail in the next poll with the status: TSU_OFI_TEST_FAULT=
  // rma_cq_enosys, and staged operations the provider refused at batch_end.
  std::vector<std::pair<RmaContext*, tsu_status_t>> faulted_;  // under mu_
  // Operations the provider refused at the post with an error that may be
  // the peer's death (tcp;ofi_rxm fails a receive matching a dead sender's
  // rendezvous at once, "Unspecified error"), under mu_.  Each waits until
  // the peer is declared lost (TSU_ERR_PEER_LOST: the contract of every
  // route) or is heard from a keep-alive interval after the refusal (alive:
  // the refusal's own status).  The peer is watched meanwhile.
  struct Doubtful {
    RmaContext* ctx;
    uint32_t rank;
    tsu_status_t status;
    uint64_t since_ns;
  };
  std::vector<Doubtful> doubtful_;
  // Batching (under mu_): inside an executor batch; what it staged; what the
  // provider had no room for (posted again by poll, before anything new).
  // A depth: the executor's batch and poll's dispatch (replies sent by
  // handlers) may nest; the outermost end posts what was staged.
  uint32_t batching_ = 0;
  std::deque<Staged> staged_;
  std::deque<Staged> retry_;

  std::atomic<uint64_t> sent_{0}, injected_{0}, received_{0}, dropped_{0}, eagain_{0},
      errors_{0}, held_count_{0}, rma_ops_{0}, rma_fallbacks_{0}, rma_injected_{0},
      posted_more_{0}, flushes_{0}, av_inserts_{0}, staged_refused_{0}, pings_{0},
      pongs_{0}, silent_lost_{0}, watch_ends_{0}, bundled_{0}, atomics_{0}, atomic_refused_{0},
      served_unseen_{0},  // polls that served peers' native RMA (poll says how it knows)
      lost_notices_{0}, lost_by_notice_{0},  // kLost sent; ranks declared lost on one
      bulk_sends_{0}, bulk_recvs_{0}, bulk_cancels_{0},
      doubtful_held_{0};  // refusals held until the peer's fate was known
  std::atomic<bool> rma_target_{false};  // a region is registered: peers may fi_write here
  bool last_poll_worked_ = false;        // poll's own (the consumer role: one thread at a time)
};

}  // namespace tsu::transport::ofi
