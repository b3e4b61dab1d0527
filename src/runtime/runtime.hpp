// The per-process runtime: configuration, ranks and nodes, this rank's
// segments, the route to every rank, thread contexts and the progress engine.
// One instance exists between tsu_init and tsu_finalize.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "core/command.hpp"
#include "core/config.hpp"
#include "core/message.hpp"
#include "runtime/progress_engine.hpp"
#include "core/segment_table.hpp"
#include "core/shared_memory.hpp"
#include "core/thread_context.hpp"
#include "transport/bulk_transfer.hpp"
#include "transport/memory_access.hpp"
#include "transport/messaging.hpp"
#include "transport/peer_loss.hpp"
#include "transport/rma.hpp"
#include "transport/transport.hpp"
#include "runtime/layer_area.hpp"

// Every transport is found in the registry and held through the seam's
// interfaces: the node transports (transport/node.hpp) in registry order,
// the network transport (transport/network.hpp) by TSU_NET.  Per rank the
// runtime keeps the route and the parts it offers (transport/transport.hpp).
namespace tsu::transport {
class NodeTransport;
}  // namespace tsu::transport

namespace tsu::runtime {

// The core types the runtime works with.
using core::CommandKind;
using core::ControlBlock;
using core::SegmentTable;
using core::SharedRegion;
using core::ThreadRegistry;
using core::VectorView;

class Runtime;

// The layers above core (am, msg, coll) as one object the runtime owns: made
// by a factory during init (after the transports, before the progress engine
// starts and before the init barrier, so their handlers are registered before
// any peer can send), polled by the engine, destroyed after it stops.
class Extension : public Poller {
 public:
  // False while the layers still have work to finish before finalize.
  virtual bool quiescent() const noexcept { return idle(); }
  // A network transport declared `rank` lost.  Called from the transport's
  // poll while it holds its own lock: only record it; the requests waiting on
  // that rank are failed from poll() (the layers take their locks there).
  virtual void note_peer_lost(uint32_t rank) noexcept { (void)rank; }
  // TSU_STATS: the layers' own counters, one line each (after the engine stopped).
  virtual void print_stats(uint32_t rank) const noexcept { (void)rank; }
};
// How the layers are made: `reserve` runs before the transports open (the
// layers reserve their slices of the layer area), `make` after.
struct ExtensionFactory {
  void (*reserve)(const Config& cfg, uint32_t size, LayerAreaPlan& plan) = nullptr;
  std::unique_ptr<Extension> (*make)(Runtime& rt, std::string& error) = nullptr;
};

class Runtime final : public CommandExecutor, private transport::RmaHost {
 public:
  // Collective.  On failure returns an error with the reason in `error`.
  static tsu_status_t create(const tsu_config_t* user_config, uint64_t epoch,
                             std::unique_ptr<Runtime>& out, std::string& error,
                             ExtensionFactory extension = {});
  ~Runtime() override;

  // Collective: completes everything in flight, waits for all ranks, tears down.
  // before_teardown (may be empty) runs after the wait, while the runtime is
  // whole: the layers' finalize hooks (tsu_add_finalize_hook).
  tsu_status_t finalize(std::string& error, const std::function<void()>& before_teardown);

  // Executes a copy or an atomic where it stands (bypass or executor).
  tsu_status_t execute(const Command& cmd, uint32_t completion_id) noexcept override;
  tsu_status_t execute_copy(const tsu_gaddr_t& dst, const tsu_gaddr_t& src,
                            std::size_t len) noexcept override;
  // Copies between two resolved ranges (plain memcpy or Cross Memory Attach).
  tsu_status_t copy_access(const transport::Access& dst, const transport::Access& src,
                           std::size_t len) noexcept;
  tsu_status_t execute_atomic(const tsu_gaddr_t& target, tsu_aop_t op, tsu_atype_t type,
                              uint64_t operand, uint64_t compare, void* result) noexcept override {
    return execute_atomic(target, op, type, operand, compare, result, nullptr);
  }
  // `nic_route` non-null: a word of a NIC segment (AtomicSite::kNic) is not
  // touched; *nic_route says so and the caller hands the atomic to the
  // network transport.  Null: such a word fails with TSU_ERR_UNSUPPORTED
  // (never a CPU atomic on it).
  tsu_status_t execute_atomic(const tsu_gaddr_t& target, tsu_aop_t op, tsu_atype_t type,
                              uint64_t operand, uint64_t compare, void* result,
                              bool* nic_route) noexcept;
  // Whether `target` (a rank this process reaches) is in a NIC segment.
  bool atomics_on_nic(const tsu_gaddr_t& target) const noexcept;
  // A vector/strided put or get to a rank this process reaches: every piece
  // checked before any byte moves (runtime/vector_ops.cpp).
  tsu_status_t execute_vector(const VectorView& req) noexcept;
  std::size_t continue_pending() noexcept override { return rma_ ? rma_->pump() : 0; }
  // Ops waiting in an RMA protocol's backlog wait for transport room, which
  // only acknowledgements (a readable socket: the engine wakes) can make.
  bool may_sleep() noexcept override { return true; }

  // Memory this process reaches (self or node peer), bounds-checked against
  // the owner's segment table.
  tsu_status_t resolve(const tsu_gaddr_t& addr, std::size_t len,
                       transport::Access& out) const noexcept override;
  tsu_status_t read_memory(const tsu_gaddr_t& src, void* dst, std::size_t len) noexcept override;
  tsu_status_t write_memory(const tsu_gaddr_t& dst, const void* src,
                            std::size_t len) noexcept override;
  // write_memory / read_memory with the main segment of a node peer or of
  // this rank handled inline (the bypass put/get's hot path): a bounds
  // check and a copy, no transport call.  Same results as the full path.
  tsu_status_t write_direct(const tsu_gaddr_t& dst, const void* src, std::size_t len) noexcept {
    if (dst.seg == TSU_SEG_MAIN) [[likely]] {
      const DirectMain& m = direct_main_[dst.rank];
      if (std::byte* base = m.mapped()) [[likely]] {
        if (dst.offset > m.size || len > m.size - dst.offset) return TSU_ERR_OUT_OF_BOUNDS;
        std::memmove(base + dst.offset, src, len);  // may overlap when the rank is the caller
        return TSU_OK;
      }
    }
    return write_memory(dst, src, len);
  }
  tsu_status_t read_direct(const tsu_gaddr_t& src, void* dst, std::size_t len) noexcept {
    if (src.seg == TSU_SEG_MAIN) [[likely]] {
      const DirectMain& m = direct_main_[src.rank];
      if (const std::byte* base = m.mapped()) [[likely]] {
        if (src.offset > m.size || len > m.size - src.offset) return TSU_ERR_OUT_OF_BOUNDS;
        std::memmove(dst, base + src.offset, len);
        return TSU_OK;
      }
    }
    return read_memory(src, dst, len);
  }
  // True when `rank`'s memory is reached from this process (self, shm);
  // false for ranks reached through an RMA protocol (the network transport's).
  bool memory_route(uint32_t rank) const noexcept override { return mem_routes_[rank] != nullptr; }
  // How this process reaches `rank`'s memory (MemoryAccess), or nullptr.
  transport::MemoryAccess* memory_access(uint32_t rank) const noexcept { return mem_routes_[rank]; }

  // The transport for `rank`, or nullptr when none reaches it.
  transport::Transport* route(uint32_t rank) const noexcept { return routes_[rank]; }

  // Segments: created or registered in this rank's table and announced to
  // the network transport (NativeRma::register_memory) before the call
  // returns; withdrawn from it before the memory goes.
  // nic_atomics (TSU_SEG_NIC_ATOMICS): refused with TSU_ERR_UNSUPPORTED
  // unless the network transport executes every atomic in its adapter.
  tsu_status_t allocate_segment(std::size_t size, tsu_seg_t& seg, void*& base,
                                std::string& error, bool nic_atomics = false) noexcept;
  // The first NIC atomic on a new NIC segment was refused: CPU atomics.
  void make_cpu_atomics(tsu_seg_t seg) noexcept;
  bool atomic_site(tsu_seg_t seg, transport::AtomicSite& out) const noexcept override;
  tsu_status_t register_segment(void* base, std::size_t size, tsu_seg_t& seg,
                                std::string& error) noexcept;
  tsu_status_t free_segment(tsu_seg_t seg, std::string& error) noexcept;
  // The transport that carries messages to `rank` (Messaging), or nullptr.
  transport::Messaging* message_route(uint32_t rank) const noexcept override {
    return msg_routes_[rank];
  }
  // The transport that moves bulk payloads to and from `rank`, or nullptr.
  transport::BulkTransfer* bulk_route(uint32_t rank) const noexcept { return bulk_routes_[rank]; }
  // PeerLoss of `rank`'s route, where it has one (no-ops and false elsewhere).
  void watch_peer(uint32_t rank) noexcept override {
    if (transport::PeerLoss* p = loss_routes_[rank]) p->watch_peer(rank);
  }
  void unwatch_peer(uint32_t rank) noexcept override {
    if (transport::PeerLoss* p = loss_routes_[rank]) p->unwatch_peer(rank);
  }
  bool peer_lost(uint32_t rank) const noexcept override {
    const transport::PeerLoss* p = loss_routes_[rank];
    return p && p->is_peer_lost(rank);
  }
  // A layer's slice of this rank's layer area (runtime/layer_area.hpp), by
  // the index its reservation returned; size 0 and nullptr where none.
  std::byte* layer_area(uint32_t slice, std::size_t& size) const noexcept;
  // The same slice of node peer `rank`'s layer area, mapped here.
  std::byte* peer_layer_area(uint32_t rank, uint32_t slice, std::size_t& size) const noexcept;
  Extension* extension() const noexcept { return extension_.get(); }

  // The bootstrap barrier.  Peers may need this rank's progress to reach the
  // barrier (their requests to us, on any route), so in manual mode a helper
  // thread drives progress while it blocks.
  tsu_status_t barrier() noexcept;

  // Blocks until the calling thread has no request in flight.
  tsu_status_t quiet(ThreadContext& tc) noexcept;

  void print_stats() const;
  // The layers' counters (Extension::print_stats) and the network transport's
  // (TSU_STATS at finalize, tsu_stats_print).
  void print_transport_stats() const;

  const Config& config() const noexcept { return cfg_; }
  uint32_t rank() const noexcept { return rank_; }
  uint32_t size() const noexcept { return size_; }
  uint32_t node_of(uint32_t r) const noexcept { return node_of_[r]; }
  uint32_t node_count() const noexcept { return node_count_; }
  bool bypass() const noexcept { return cfg_.bypass; }
  bool manual_progress() const noexcept { return cfg_.progress_mode == TSU_PROGRESS_MANUAL; }
  // TSU_YIELD: tsu_progress() gives the CPU away when it found no work.
  bool yield_when_idle() const noexcept { return yield_when_idle_.load(std::memory_order_relaxed); }
  // Decides TSU_YIELD=auto again: tsu_set_busy_threads changed the count.
  void update_yield() noexcept;
  SegmentTable& segments() noexcept { return segments_; }
  ThreadRegistry& threads() noexcept { return threads_; }
  ProgressEngine& engine() noexcept { return *engine_; }
  // TSU_PROGRESS_THREADS > 1: lanes beside the progress thread.
  bool has_lanes() const noexcept { return !lanes_.empty(); }
  // The engine that executes tc's node-local requests: the progress thread's
  // or a lane, chosen round-robin (lanes first) at the thread's first request and kept
  // (one ring per thread: a thread's requests stay in issue order).
  ProgressEngine& lane_of(ThreadContext& tc) noexcept {
    ProgressEngine* e = tc.lane;
    if (!e) [[unlikely]] e = tc.lane = &pick_lane();
    return *e;
  }
  MessageHandlerTable& handlers() noexcept { return handlers_; }

 private:
  // tsu_quiet in manual progress, idle: sleeps in the engine until woken
  // (false: another waiter sleeps there; nothing done).
  bool sleep_in_engine(ThreadContext& tc) noexcept;
  explicit Runtime(const Config& cfg, uint64_t epoch);
  tsu_status_t connect_peers(std::string& error);
  tsu_status_t open_node_transports(std::string& error);
  // Records `t` as the route to `rank`, with the parts it offers.
  void set_route(uint32_t rank, transport::Transport* t, const transport::Parts& parts) noexcept;
  double cpus_per_node_rank() const noexcept;
  bool oversubscribed() const noexcept;
  uint32_t cpus_ = 1;        // in this rank's affinity mask at tsu_init
  uint32_t node_ranks_ = 1;  // ranks on this rank's node
  tsu_status_t connect_network(const std::vector<bool>& remote, std::string& error);
  static void on_peer_lost(void* ctx, uint32_t rank) noexcept;
  tsu_status_t announce_segment(tsu_seg_t seg, void* base, std::size_t size, bool user_memory,
                                std::string& error,
                                transport::AtomicSite site = transport::AtomicSite::kCpu) noexcept;
  // Why this job cannot give a segment NIC atomics ("" when it can).
  std::string nic_atomics_refusal() const;
  // RmaHost (transport/rma.hpp): what an RMA protocol uses of the runtime.
  uint32_t host_rank() const noexcept override { return rank_; }
  uint32_t host_size() const noexcept override { return size_; }
  void complete(uint32_t completion_id, tsu_status_t status) noexcept override;
  bool memory_key(tsu_seg_t seg, transport::MemoryKey& out) const noexcept override;
  MessageHandlerTable& handler_table() noexcept override { return handlers_; }

  Config cfg_;
  // Every rank's message queues (the shm transport's settings,
  // NodePlugin::message_geometry), read at create.
  uint32_t ring_slots_ = 0;
  uint32_t slot_size_ = 0;
  uint32_t rank_ = 0;
  uint32_t size_ = 1;
  uint32_t node_count_ = 1;
  std::vector<uint32_t> node_of_;
  std::atomic<bool> yield_when_idle_{false};  // read by tsu_progress, set by update_yield
  std::unique_ptr<bootstrap::Bootstrap> boot_;
  SegmentTable segments_;
  // This rank's layer area: created here, published in the control block,
  // mapped by node peers (LayerAreaPlan's slices, runtime/layer_area.hpp).
  struct OwnedRegion : SharedRegion {
    OwnedRegion() = default;
    OwnedRegion(const OwnedRegion&) = delete;
    OwnedRegion& operator=(const OwnedRegion&) = delete;
    ~OwnedRegion() { shared_region_destroy(*this); }
  };
  OwnedRegion layer_area_;  // outlives node_ (declared before it)
  // The node transports in registry order, with the parts each offers.
  std::vector<std::unique_ptr<transport::NodeTransport>> node_;
  std::vector<transport::Parts> node_parts_;
  std::unique_ptr<transport::Transport> net_;  // to other nodes (TSU_NET), or null
  transport::Parts net_parts_;
  // RMA and atomics to ranks behind the network transport: its own protocol
  // or the message emulation (transport/rma.hpp); null without one.
  std::unique_ptr<transport::RmaProtocol> rma_;
  mutable std::mutex keys_mutex_;  // registration (user threads) vs lookups (progress)
  std::vector<std::pair<tsu_seg_t, transport::MemoryKey>> memory_keys_;  // non-empty keys only
  // Per rank: its route, and the parts of it the layers use (null: not
  // offered).  Written at init, read-only after.
  std::vector<transport::Transport*> routes_;
  std::vector<transport::MemoryAccess*> mem_routes_;
  std::vector<transport::Messaging*> msg_routes_;
  std::vector<transport::BulkTransfer*> bulk_routes_;
  std::vector<transport::PeerLoss*> loss_routes_;
  // Per rank: its main segment as mapped here (MemoryAccess::direct_main), or
  // a null base.  Written at init, before any request; the base is nulled
  // when the rank is lost (on_peer_lost), so that later requests take the
  // transport's path and fail there with TSU_ERR_PEER_LOST.
  struct DirectMain {
    std::atomic<std::byte*> base{nullptr};
    uint64_t size = 0;
    std::byte* mapped() const noexcept { return base.load(std::memory_order_relaxed); }
  };
  std::unique_ptr<DirectMain[]> direct_main_;
  ThreadRegistry threads_;
  MessageHandlerTable handlers_;
  int wake_eventfd_ = -1;
  std::unique_ptr<Extension> extension_;  // destroyed after engine_ (declared before it)
  std::unique_ptr<ProgressEngine> engine_;
  ProgressEngine& pick_lane() noexcept;
  void start_lanes() noexcept;
  void stop_lanes() noexcept;
  // What a lane executes: node-local requests only (lane_of's callers route
  // nothing else there), so never the network protocol, nor its pending
  // work.
  class LaneExecutor final : public CommandExecutor {
   public:
    explicit LaneExecutor(Runtime& rt) : rt_(rt) {}
    tsu_status_t execute(const Command& cmd, uint32_t) noexcept override {
      return rt_.execute(cmd, UINT32_MAX);
    }

   private:
    Runtime& rt_;
  };
  std::unique_ptr<LaneExecutor> lane_executor_;
  // Each lane's doorbell word (private: no node peer rings a lane).
  std::unique_ptr<DoorbellShared[]> lane_bells_;
  std::vector<std::unique_ptr<ProgressEngine>> lanes_;
  std::atomic<uint32_t> next_lane_{0};
};

// The live runtime, or null before tsu_init / after tsu_finalize.
extern std::atomic<Runtime*> g_runtime;

// tsu_set_busy_threads: this process's pthreads that run or poll without
// sleeping (1 until set: the thread that calls tsunagi).  Kept across
// tsu_init and tsu_finalize.
void set_busy_threads(uint32_t n) noexcept;
uint32_t busy_threads() noexcept;
// CPUs in the calling thread's affinity mask (1 when it cannot be read).
uint32_t affinity_cpus() noexcept;

}  // namespace tsu::runtime
