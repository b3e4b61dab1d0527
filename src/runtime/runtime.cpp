// The runtime's setup: creating it at tsu_init (bootstrap record, node and
// network transports, peers), oversubscription, and the progress lanes.
#include "runtime/runtime.hpp"

#include <sched.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <arpa/inet.h>
#include <sys/random.h>

#include "bootstrap/auth.hpp"
#include "core/atomic_exec.hpp"
#include "core/log.hpp"
#include "transport/message_rma/message_rma.hpp"
#include "transport/network.hpp"
#include "transport/node.hpp"

namespace tsu::runtime {

using core::clamp_to_slot;
using core::config_apply_user;
using core::config_from_env;
using core::g_log_level;
using core::GetEnv;
using core::log_set_rank;

std::atomic<Runtime*> g_runtime{nullptr};

namespace {
std::atomic<uint32_t> g_busy_threads{1};
}  // namespace

void set_busy_threads(uint32_t n) noexcept { g_busy_threads.store(n, std::memory_order_relaxed); }
uint32_t busy_threads() noexcept { return g_busy_threads.load(std::memory_order_relaxed); }

uint32_t affinity_cpus() noexcept {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return static_cast<uint32_t>(std::max(CPU_COUNT(&set), 1));
}

namespace {
// What each rank publishes at init ("tsu.rank.<r>").
struct RankRecord {
  int32_t pid;
  int32_t control_fd;
  char node[232];
};
static_assert(sizeof(RankRecord) == 240);

std::string rank_key(uint32_t r) { return "tsu.rank." + std::to_string(r); }

}  // namespace

Runtime::Runtime(const Config& cfg, uint64_t epoch)
    : cfg_(cfg), threads_(epoch) {}

std::byte* Runtime::layer_area(uint32_t slice, std::size_t& size) const noexcept {
  return find_layer_slice(static_cast<std::byte*>(layer_area_.base), layer_area_.size, slice,
                          size);
}

std::byte* Runtime::peer_layer_area(uint32_t rank, uint32_t slice,
                                    std::size_t& size) const noexcept {
  size = 0;
  transport::MemoryAccess* mem = rank < size_ ? mem_routes_[rank] : nullptr;
  std::size_t area_size = 0;
  std::byte* area = mem ? mem->peer_layer_area(rank, area_size) : nullptr;
  return find_layer_slice(area, area_size, slice, size);
}

void Runtime::set_route(uint32_t rank, transport::Transport* t,
                        const transport::Parts& parts) noexcept {
  routes_[rank] = t;
  mem_routes_[rank] = parts.memory;
  msg_routes_[rank] = parts.messages;
  bulk_routes_[rank] = parts.bulk;
  loss_routes_[rank] = parts.peer_loss;
}

Runtime::~Runtime() {
  stop_lanes();
  if (engine_) engine_->stop();
  engine_.reset();
  if (wake_eventfd_ >= 0) close(wake_eventfd_);
}

tsu_status_t Runtime::create(const tsu_config_t* user_config, uint64_t epoch,
                             std::unique_ptr<Runtime>& out, std::string& error,
                             ExtensionFactory extension) {
  Config cfg;
  const GetEnv getenv_fn = [](const char* n) { return std::getenv(n); };
  tsu_status_t st = config_from_env(cfg, getenv_fn, error);
  // The message ring's geometry is the shm transport's setting; its slot
  // bounds the medium AM and eager sizes.
  transport::MessageGeometry geometry;
  if (st == TSU_OK) st = transport::node_message_geometry(getenv_fn, geometry, error);
  if (st == TSU_OK) clamp_to_slot(cfg, geometry.slot_size);
  if (st == TSU_OK) st = config_apply_user(cfg, user_config, error);
  if (st != TSU_OK) return st;
  if (!transport::find_network_transport(cfg.net)) {
    error = "TSU_NET='" + cfg.net + "': no such network transport in this build (built in:";
    for (const transport::NetworkPlugin* p : transport::network_transports())
      error += std::string(" ") + p->name;
    error += ")";
    return TSU_ERR_CONFIG;
  }
  g_log_level.store(cfg.log_level, std::memory_order_relaxed);

  std::unique_ptr<Runtime> rt(new Runtime(cfg, epoch));
  rt->ring_slots_ = geometry.ring_slots;
  rt->slot_size_ = geometry.slot_size;
  rt->boot_ = bootstrap::make_from_environment(st, error);
  if (!rt->boot_) return st;
  rt->rank_ = rt->boot_->rank();
  rt->size_ = rt->boot_->size();
  log_set_rank(rt->rank_);

  // Let node peers use Cross Memory Attach on us even where Yama restricts
  // ptrace to descendants (harmless where Yama is absent).
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

  st = rt->segments_.init(rt->rank_, cfg.segment_size, error);
  if (st != TSU_OK) return st;
  // The eventfd exists before the bootstrap record is published: node peers
  // duplicate it when they connect (shm transport).
  rt->wake_eventfd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (rt->wake_eventfd_ < 0) {
    error = std::string("eventfd: ") + std::strerror(errno);
    return TSU_ERR_SYSTEM;
  }
  ControlBlock* cb = rt->segments_.control_block();
  cb->wake_eventfd = rt->wake_eventfd_;
  // The layer area, with the slices the layers reserve (runtime/layer_area.hpp),
  // before the bootstrap record lets node peers map it.
  LayerAreaPlan plan;
  if (extension.reserve) extension.reserve(cfg, rt->size_, plan);
  st = shared_region_create("tsu-layer-area", plan.total_bytes(), rt->layer_area_, error);
  if (st != TSU_OK) return st;
  write_layer_directory(static_cast<std::byte*>(rt->layer_area_.base), plan);
  cb->layer_area_fd = rt->layer_area_.fd;
  cb->layer_area_size = rt->layer_area_.size;
  st = rt->connect_peers(error);
  if (st != TSU_OK) return st;
  rt->direct_main_ = std::make_unique<DirectMain[]>(rt->size_);
  for (uint32_t r = 0; r < rt->size_; ++r) {
    std::byte* base = nullptr;
    uint64_t size = 0;
    if (rt->mem_routes_[r] && rt->mem_routes_[r]->direct_main(r, base, size)) {
      rt->direct_main_[r].base.store(base, std::memory_order_relaxed);
      rt->direct_main_[r].size = size;
    }
  }

  rt->engine_ = std::make_unique<ProgressEngine>(rt->cfg_, *rt,
                                                 Doorbell(&cb->doorbell, rt->wake_eventfd_));
  // TSU_SPIN_US=auto: a long idle spin where every rank of the node can have
  // a core for its progress thread beside one for its own threads (a spin
  // there costs nobody; a sleep costs a wake-up, as long as a round trip
  // over the network), a short one where they share (docs/design-decisions.md,
  // "Progress engine", idle policy).
  if (rt->cfg_.spin_us == Config::kSpinAuto)
    rt->engine_->set_spin_us(rt->cpus_per_node_rank() >= 2 ? ProgressEngine::kAutoSpinUsOwnCores
                                                           : ProgressEngine::kAutoSpinUsShared);
  // Polling while this rank's requests are out costs nobody there either; on
  // a node whose ranks share cores it takes the core a peer rank needs
  // (docs/design-decisions.md, "Progress engine").
  rt->engine_->set_poll_while_out(rt->cpus_per_node_rank() >= 2);
  rt->engine_->set_handlers(&rt->handlers_);
  rt->update_yield();  // (connect_peers counted the node's ranks before the engine existed)
  // The node transports, in registry order, are polled by the engine; a node
  // peer whose process exits is lost like a silent network peer.
  for (std::size_t i = 0; i < rt->node_.size(); ++i) {
    if (transport::PeerLoss* loss = rt->node_parts_[i].peer_loss)
      loss->set_peer_lost_handler(&Runtime::on_peer_lost, rt.get());
    rt->engine_->add_transport(rt->node_[i].get());
  }
  if (rt->net_) {
    // RMA and atomics to its ranks: the transport's own protocol, or over its
    // messages (transport/rma.hpp).
    if (!rt->net_parts_.memory) {
      if (rt->net_parts_.rma) rt->rma_ = rt->net_parts_.rma->make_rma(*rt);
      if (!rt->rma_) {
        auto emulation =
            std::make_unique<transport::MessageRma>(static_cast<transport::RmaHost&>(*rt));
        emulation->register_handlers(rt->handlers_);
        rt->rma_ = std::move(emulation);
      }
    }
    // The main segment is announced like every later one.
    void* main_base = nullptr;
    std::size_t main_size = 0;
    if (rt->segments_.info(0, main_base, main_size)) {
      st = rt->announce_segment(0, main_base, main_size, false, error);
      if (st != TSU_OK) return st;
    }
    if (transport::PeerLoss* loss = rt->net_parts_.peer_loss)
      loss->set_peer_lost_handler(&Runtime::on_peer_lost, rt.get());
    rt->engine_->add_transport(rt->net_.get());
  }
  if (extension.make) {
    rt->extension_ = extension.make(*rt, error);
    if (!rt->extension_) return TSU_ERR_SYSTEM;
    rt->engine_->add_poller(rt->extension_.get());
  }
  st = rt->engine_->start(error);
  if (st != TSU_OK) return st;
  rt->start_lanes();
  // Nobody touches a peer's memory before every rank has mapped everything.
  st = rt->boot_->barrier();
  if (st != TSU_OK) {
    error = "bootstrap barrier at init failed";
    return st;
  }
  TSU_LOG_INFO("initialized: rank %u of %u, node %u of %u, bypass=%d, progress=%s, yield=%d",
               rt->rank_, rt->size_, rt->node_of_[rt->rank_], rt->node_count_, cfg.bypass,
               cfg.progress_mode == TSU_PROGRESS_MANUAL ? "manual" : "thread",
               rt->yield_when_idle());
  out = std::move(rt);
  return TSU_OK;
}

// TSU_YIELD=auto: more threads poll on this node than this process may run
// on, so a thread that polls holds a CPU another one needs (as Open MPI's
// oversubscription detection, but counting threads, not ranks).  Each rank
// counts its busy threads (tsu_set_busy_threads: the application's, a ULT
// scheduler's workers) and takes its node peers to run as many (there is no
// exchange).  Progress threads do not count: they spin briefly and sleep,
// and where they were counted the yields handed the CPU to a spinning one
// (docs/ult.md, "Oversubscription").
// The CPUs are those at tsu_init.
bool Runtime::oversubscribed() const noexcept {
  return uint64_t{node_ranks_} * busy_threads() > cpus_;
}

void Runtime::update_yield() noexcept {
  const bool shared = cfg_.yield_idle >= 0 ? cfg_.yield_idle == 1 : oversubscribed();
  yield_when_idle_.store(shared, std::memory_order_relaxed);
  if (engine_) engine_->set_oversubscribed(shared);
}

// CPUs in this rank's affinity mask at tsu_init over the ranks on its node.
double Runtime::cpus_per_node_rank() const noexcept {
  return static_cast<double>(cpus_) / std::max<uint32_t>(node_ranks_, 1);
}

tsu_status_t Runtime::connect_peers(std::string& error) {
  RankRecord mine{};
  mine.pid = static_cast<int32_t>(getpid());
  mine.control_fd = segments_.control_block_fd();
  std::string node = cfg_.node_id;
  if (node.empty()) {
    char host[200] = {};
    gethostname(host, sizeof host - 1);
    node = host;
  }
  std::snprintf(mine.node, sizeof mine.node, "%s", node.c_str());
  tsu_status_t st = open_node_transports(error);
  if (st != TSU_OK) return st;
  st = boot_->put(rank_key(rank_), std::as_bytes(std::span(&mine, 1)));
  if (st != TSU_OK) {
    error = "bootstrap put failed";
    return st;
  }
  // When the launcher tells the layout (bootstrap node_layout), a rank
  // fetches only its node peers' records: start-up requests do not grow
  // with the job (docs/scaling.md).  Otherwise every rank learns every other
  // rank's node from its record.
  std::vector<uint32_t> layout;
  const bool layout_known = boot_->node_layout(layout) && layout.size() == size_;
  std::vector<RankRecord> all(size_);
  for (uint32_t r = 0; r < size_; ++r) {
    if (r == rank_) {
      all[r] = mine;
      continue;
    }
    if (layout_known && layout[r] != layout[rank_]) continue;
    std::vector<std::byte> value;
    st = boot_->get(rank_key(r), value);
    if (st != TSU_OK || value.size() != sizeof(RankRecord)) {
      error = "bootstrap get of rank " + std::to_string(r) + " failed";
      return st != TSU_OK ? st : TSU_ERR_BOOTSTRAP;
    }
    std::memcpy(&all[r], value.data(), sizeof(RankRecord));
    all[r].node[sizeof all[r].node - 1] = '\0';
    if (layout_known && std::strcmp(all[r].node, mine.node) != 0) {
      error = "the launcher's layout (TSU_PLACEMENT / PMIx) puts rank " + std::to_string(r) +
              " on this rank's node, but it runs on '" + all[r].node + "', not '" + mine.node + "'";
      return TSU_ERR_CONFIG;
    }
  }
  std::map<std::string, uint32_t> node_ids;
  node_of_.resize(size_);
  if (layout_known) {
    node_of_ = layout;
    node_count_ = 0;
    for (uint32_t n : layout) node_count_ = std::max(node_count_, n + 1);
  } else {
    for (uint32_t r = 0; r < size_; ++r) {
      auto [it, inserted] = node_ids.try_emplace(all[r].node, static_cast<uint32_t>(node_ids.size()));
      node_of_[r] = it->second;
    }
    node_count_ = static_cast<uint32_t>(node_ids.size());
  }
  cpus_ = affinity_cpus();
  node_ranks_ = 0;
  for (uint32_t r = 0; r < size_; ++r) node_ranks_ += node_of_[r] == node_of_[rank_];
  update_yield();

  routes_.assign(size_, nullptr);
  mem_routes_.assign(size_, nullptr);
  msg_routes_.assign(size_, nullptr);
  bulk_routes_.assign(size_, nullptr);
  loss_routes_.assign(size_, nullptr);
  // Each rank of this node (this one included) is offered to the node
  // transports in registry order: the first that takes it is its route.
  for (uint32_t r = 0; r < size_; ++r) {
    if (node_of_[r] != node_of_[rank_]) continue;
    const transport::NodePeer peer{r, all[r].pid, all[r].control_fd};
    for (std::size_t i = 0; i < node_.size() && !routes_[r]; ++i) {
      std::string why;
      st = node_[i]->add_peer(peer, why);
      if (st == TSU_OK) {
        set_route(r, node_[i].get(), node_parts_[i]);
      } else if (st != TSU_ERR_UNSUPPORTED) {
        error = std::string(node_[i]->name()) + ": " + why;
        return st;
      }
    }
    if (!routes_[r]) {
      error = "no node transport reaches rank " + std::to_string(r) + " of this node";
      return TSU_ERR_UNREACHABLE;
    }
  }
  // Ranks on other nodes: the network transport TSU_NET names (udp, ofi, tcp).
  std::vector<bool> remote(size_, false);
  bool any_remote = false;
  for (uint32_t r = 0; r < size_; ++r) {
    remote[r] = node_of_[r] != node_of_[rank_];
    any_remote = any_remote || remote[r];
  }
  if (any_remote) return connect_network(remote, error);
  return TSU_OK;
}

// Every node transport of the registry, in its order.  They exist before
// peers can learn about them from the bootstrap record.
tsu_status_t Runtime::open_node_transports(std::string& error) {
  ControlBlock* cb = segments_.control_block();
  transport::NodeSetup setup;
  setup.rank = rank_;
  setup.size = size_;
  setup.segments = &segments_;
  setup.control = cb;
  setup.doorbell = Doorbell(&cb->doorbell, wake_eventfd_);
  setup.ring_slots = ring_slots_;
  setup.slot_size = slot_size_;
  setup.layer_area = static_cast<std::byte*>(layer_area_.base);
  setup.layer_area_size = layer_area_.size;
  for (const transport::NodePlugin* plugin : transport::node_transports()) {
    std::unique_ptr<transport::NodeTransport> t;
    const tsu_status_t st = plugin->open(setup, t, error);
    if (st != TSU_OK) {
      error = std::string(plugin->name) + ": " + error;
      return st;
    }
    node_parts_.push_back(t->parts());
    node_.push_back(std::move(t));
  }
  return TSU_OK;
}

// Ranks on other nodes: the network transport TSU_NET names (transport
// registry), connected through the bootstrap.  Routes to those ranks, and
// their messages, go through it.
tsu_status_t Runtime::connect_network(const std::vector<bool>& remote, std::string& error) {
  // The per-job secret, handed to this rank out of band by tsurun (the same
  // one that authenticated its bootstrap connection).  tsurun's is never
  // published through the bootstrap; a PMIx job's is drawn by rank 0 and
  // served by PMIx (docs/launchers.md).  A job without one cannot reach
  // other nodes.
  std::string secret_error;
  const auto job_secret = boot_->job_secret(secret_error);
  if (!job_secret) {
    error = !secret_error.empty()
                ? secret_error
                : "ranks on other nodes need the job secret from tsurun (TSU_JOB_SECRET_FD), "
                  "and none was given";
    return TSU_ERR_CONFIG;
  }
  const transport::NetworkPlugin* plugin = transport::find_network_transport(cfg_.net);
  transport::NetworkSetup setup;
  setup.rank = rank_;
  setup.size = size_;
  setup.reach = remote;
  setup.boot = boot_.get();
  setup.job_secret = std::as_bytes(std::span(*job_secret));
  setup.derive_key = [&secret = *job_secret](std::string_view purpose) {
    return bootstrap::auth::derive_key(secret, purpose);
  };
  setup.getenv = [](const char* n) { return std::getenv(n); };
  const tsu_status_t st = plugin->connect(setup, net_, error);
  if (st != TSU_OK) {
    error = std::string(plugin->name) + ": " + error;
    return st;
  }
  net_parts_ = net_->parts();
  // AM, tagged messages and collectives run over it too (the layers fall
  // back to message protocols where they would need shared memory).
  for (uint32_t r = 0; r < size_; ++r)
    if (remote[r]) set_route(r, net_.get(), net_parts_);
  return TSU_OK;
}

void Runtime::on_peer_lost(void* ctx, uint32_t rank) noexcept {
  auto* rt = static_cast<Runtime*>(ctx);
  // Later puts, gets and atomics on its main segment go through the
  // transport (which refuses them) instead of the mapping.
  rt->direct_main_[rank].base.store(nullptr, std::memory_order_relaxed);
  if (rt->rma_) rt->rma_->on_peer_lost(rank);
  if (rt->extension_) rt->extension_->note_peer_lost(rank);
}

void Runtime::complete(uint32_t completion_id, tsu_status_t status) noexcept {
  engine_->finish(completion_id, status);
}

void Runtime::start_lanes() noexcept {
  const uint32_t want = cfg_.progress_threads;
  if (want <= 1) return;
  if (manual_progress()) {
    TSU_LOG_WARN("TSU_PROGRESS_THREADS=%u ignored: lanes need TSU_PROGRESS=thread", want);
    return;
  }
  try {
    lane_executor_ = std::make_unique<LaneExecutor>(*this);
    lane_bells_ = std::make_unique<DoorbellShared[]>(want - 1);
    for (uint32_t i = 0; i + 1 < want; ++i) {
      auto lane = std::make_unique<ProgressEngine>(cfg_, *lane_executor_,
                                                   Doorbell(&lane_bells_[i], -1), /*lane=*/true);
      lane->set_spin_us(engine_->spin_us());
      std::string why;
      if (lane->start(why) != TSU_OK) {
        // Fewer consumers is slower, not wrong: go on with those started.
        TSU_LOG_WARN("progress lane %u not started (%s): %zu lanes serve this rank", i + 1,
                     why.c_str(), lanes_.size());
        break;
      }
      lanes_.push_back(std::move(lane));
    }
  } catch (const std::bad_alloc&) {
    TSU_LOG_WARN("no memory for progress lanes: %zu lanes serve this rank", lanes_.size());
  }
}

void Runtime::stop_lanes() noexcept {
  // Each drains its rings before its thread ends (thread_main).
  for (auto& lane : lanes_) lane->stop();
}

ProgressEngine& Runtime::pick_lane() noexcept {
  // Lanes first: the progress thread also serves the network and the
  // messages, so it takes a thread's requests only when every lane has one.
  const uint32_t i = next_lane_.fetch_add(1, std::memory_order_relaxed) %
                     static_cast<uint32_t>(lanes_.size() + 1);
  return i < lanes_.size() ? *lanes_[i] : *engine_;
}

}  // namespace tsu::runtime
