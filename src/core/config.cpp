#include "core/config.hpp"

#include <cerrno>
#include <cinttypes>
#include <cstdlib>
#include <cstring>
#include <strings.h>

namespace tsu::core {

namespace {
constexpr std::size_t kMinSegment = 4096;
constexpr uint32_t kMinRing = 2;
constexpr uint32_t kMaxRing = 1u << 24;

bool parse_u64(const char* text, uint64_t& out) {
  if (!text || !*text) return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno || end == text || *end || text[0] == '-') return false;
  out = v;
  return true;
}
}  // namespace

bool parse_size(const char* text, std::size_t& out) {
  if (!text || !*text || text[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno || end == text) return false;
  unsigned shift = 0;
  if (*end) {
    switch (*end) {
      case 'k': case 'K': shift = 10; break;
      case 'm': case 'M': shift = 20; break;
      case 'g': case 'G': shift = 30; break;
      default: return false;
    }
    ++end;
    if (*end == 'i' || *end == 'I') ++end;
    if (*end == 'b' || *end == 'B') ++end;
    if (*end) return false;
  }
  if (shift && v > (UINT64_MAX >> shift)) return false;
  out = static_cast<std::size_t>(v << shift);
  return true;
}

bool parse_bool(const char* text, bool& out) {
  if (!text) return false;
  for (const char* t : {"1", "yes", "on", "true"})
    if (!strcasecmp(text, t)) return out = true, true;
  for (const char* f : {"0", "no", "off", "false"})
    if (!strcasecmp(text, f)) return out = false, true;
  return false;
}

bool parse_log_level(const char* text, int& out) {
  if (!text) return false;
  static const char* const names[] = {"off", "error", "warn", "info", "debug", "trace"};
  for (int i = 0; i < 6; ++i)
    if (!strcasecmp(text, names[i])) return out = i, true;
  if (text[0] >= '0' && text[0] <= '5' && text[1] == '\0') return out = text[0] - '0', true;
  return false;
}

bool parse_duration(const char* text, uint64_t& ns) {
  if (!text || !*text || text[0] == '-') return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (errno || end == text || v < 0 || v > 1e12) return false;
  double mult;
  if (!*end || !strcmp(end, "ms")) mult = 1e6;
  else if (!strcmp(end, "s")) mult = 1e9;
  else if (!strcmp(end, "us")) mult = 1e3;
  else if (!strcmp(end, "ns")) mult = 1;
  else return false;
  ns = static_cast<uint64_t>(v * mult);
  return true;
}

const std::vector<ConfigVar>& config_vars() {
  static const std::vector<ConfigVar> vars = {
      {"TSU_SEGMENT_SIZE", "64M", "bytes of each rank's main shared segment (K/M/G suffixes)"},
      {"TSU_RING_SIZE", "1024", "slots in the progress engine's command ring (power of two)"},
      {"TSU_PROGRESS", "thread", "thread: a progress thread per process; manual: call tsu_progress()"},
      {"TSU_BYPASS", "1", "1: intra-node RMA and atomics run in the caller; 0: through the engine"},
      {"TSU_SPIN_US", "20", "most microseconds an idle progress thread spins before it sleeps (adaptive: less when idle gaps are longer)"},
      {"TSU_INLINE_EXEC", "1", "1: a network RMA/atomic issued while the progress thread sleeps is started by the issuer"},
      {"TSU_YIELD", "auto", "1: tsu_progress() calls sched_yield when it found nothing to do "
                            "(ranks sharing a CPU); auto: when the node has more ranks than CPUs"},
      {"TSU_LOG", "warn", "log level: off, error, warn, info, debug, trace"},
      {"TSU_STATS", "0", "1: print per-rank counters to stderr at finalize"},
      {"TSU_NODE_ID", "(host name)", "node identity; ranks with equal ids share memory"},
      {"TSU_SHM_RING_SLOTS", "256", "slots in each rank's shared-memory message ring (power of two)"},
      {"TSU_SHM_SLOT_SIZE", "8256", "bytes per message-ring slot: 64 B header + payload (multiple of 64)"},
      {"TSU_AM_MEDIUM_MAX", "8192", "largest medium active-message payload (clamped to the slot payload)"},
      {"TSU_EAGER_MAX", "8192", "tagged messages up to this size go eager, larger ones rendezvous"},
      {"TSU_SCEAGER_MIN", "512", "single-copy eager is tried from this size up (measured crossover here; paper: 256)"},
      {"TSU_SCEAGER", "1", "1: senders copy straight into an already posted receive (seed 004)"},
      {"TSU_POSTED_SLOTS", "64", "posted receives per rank visible to node peers (single-copy eager)"},
      {"TSU_COLL_LARGE_MIN", "64K", "allreduce of this many bytes up: reduce-scatter + allgather "
                                    "(recursive halving/doubling) instead of recursive doubling"},
      {"TSU_COLL_DIRECT", "0", "1: allreduce in a team on one node reads and writes the peers' "
                               "buffers directly (Cross Memory Attach) from TSU_COLL_DIRECT_MIN "
                               "up (off: slower than messages on the measured machine)"},
      {"TSU_COLL_DIRECT_MIN", "64K", "smallest allreduce (bytes) that takes the direct path"},
      {"TSU_UDP_ADDR", "(derived)", "udp: IPv4 address to bind and advertise (default: the "
                                    "address reaching the tcp bootstrap, else 127.0.0.1)"},
      {"TSU_UDP_PORT", "0", "udp: port to bind (0: any free port)"},
      {"TSU_UDP_MTU", "1472", "udp: bytes per datagram (UDP payload; 1472 fits a 1500 MTU)"},
      {"TSU_UDP_WINDOW", "1024", "udp: most datagrams in flight per peer (power of two)"},
      {"TSU_UDP_QUEUE", "4096", "udp: most datagrams queued per peer (power of two >= window)"},
      {"TSU_UDP_MAX_MESSAGE", "256K", "udp: largest message; RMA is split into pieces this big"},
      {"TSU_UDP_RTO_INIT", "20ms", "udp: retransmission timeout before an RTT is measured"},
      {"TSU_UDP_RTO_MIN", "10ms", "udp: lower bound of the retransmission timeout (scheduling delays on busy hosts exceed RTTs)"},
      {"TSU_UDP_KEEPALIVE", "500ms", "udp: ping a peer silent for this long"},
      {"TSU_UDP_PEER_TIMEOUT", "10s", "udp: a peer silent this long is lost (TSU_ERR_PEER_LOST)"},
      {"TSU_UDP_SOCKBUF", "4M", "udp: kernel send/receive buffer of the socket"},
      {"TSU_UDP_GSO", "1", "udp: 1: consecutive datagrams to one peer leave as one segmented send (UDP_SEGMENT)"},
      {"TSU_UDP_GRO", "1", "udp: 1: receive segmented sends coalesced, one buffer per group (UDP_GRO)"},
      {"TSU_UDP_AUTH", "0", "udp: 1: authenticate every datagram's payload too (keyed BLAKE2b tag; for "
                            "untrusted networks; every rank must agree)"},
      {"TSU_UDP_CWND_MIN", "4", "udp: congestion window floor in datagrams"},
      {"TSU_UDP_IMPAIR", "(off)", "udp TEST FACILITY: impair sent datagrams, e.g. "
                                  "loss=10,reorder=25,dup=5,corrupt=1,delay=2ms,jitter=1ms,seed=1"},
      {"TSU_UDP_TRACE", "(off)", "udp: write cwnd/RTT/retransmission events to FILE.<rank>"},
  };
  return vars;
}

tsu_status_t config_from_env(Config& cfg, const GetEnv& getenv_fn, std::string& error) {
  auto bad = [&](const char* var, const char* value, const char* expected) {
    error = std::string(var) + "='" + value + "' is invalid: expected " + expected;
    return TSU_ERR_CONFIG;
  };
  if (const char* v = getenv_fn("TSU_SEGMENT_SIZE")) {
    std::size_t s;
    if (!parse_size(v, s) || s < kMinSegment)
      return bad("TSU_SEGMENT_SIZE", v, "a size of at least 4096 bytes, e.g. 64M");
    cfg.segment_size = s;
  }
  if (const char* v = getenv_fn("TSU_RING_SIZE")) {
    uint64_t n;
    if (!parse_u64(v, n) || n < kMinRing || n > kMaxRing || (n & (n - 1)))
      return bad("TSU_RING_SIZE", v, "a power of two between 2 and 16777216");
    cfg.ring_size = static_cast<uint32_t>(n);
  }
  if (const char* v = getenv_fn("TSU_PROGRESS")) {
    if (!strcasecmp(v, "thread")) cfg.progress_mode = TSU_PROGRESS_THREAD;
    else if (!strcasecmp(v, "manual")) cfg.progress_mode = TSU_PROGRESS_MANUAL;
    else return bad("TSU_PROGRESS", v, "'thread' or 'manual'");
  }
  if (const char* v = getenv_fn("TSU_BYPASS")) {
    if (!parse_bool(v, cfg.bypass)) return bad("TSU_BYPASS", v, "0 or 1");
  }
  if (const char* v = getenv_fn("TSU_INLINE_EXEC")) {
    if (!parse_bool(v, cfg.inline_exec)) return bad("TSU_INLINE_EXEC", v, "0 or 1");
  }
  if (const char* v = getenv_fn("TSU_SPIN_US")) {
    uint64_t n;
    if (!parse_u64(v, n) || n > 10'000'000) return bad("TSU_SPIN_US", v, "0..10000000");
    cfg.spin_us = static_cast<uint32_t>(n);
  }
  if (const char* v = getenv_fn("TSU_YIELD")) {
    bool on = false;
    if (!strcasecmp(v, "auto")) cfg.yield_idle = -1;
    else if (parse_bool(v, on)) cfg.yield_idle = on ? 1 : 0;
    else return bad("TSU_YIELD", v, "0, 1 or auto");
  }
  if (const char* v = getenv_fn("TSU_LOG")) {
    if (!parse_log_level(v, cfg.log_level))
      return bad("TSU_LOG", v, "off, error, warn, info, debug or trace");
  }
  if (const char* v = getenv_fn("TSU_STATS")) {
    if (!parse_bool(v, cfg.stats)) return bad("TSU_STATS", v, "0 or 1");
  }
  if (const char* v = getenv_fn("TSU_NODE_ID")) {
    if (!*v || std::strlen(v) > 200) return bad("TSU_NODE_ID", v, "1 to 200 characters");
    cfg.node_id = v;
  }
  if (const char* v = getenv_fn("TSU_SHM_RING_SLOTS")) {
    uint64_t n;
    if (!parse_u64(v, n) || n < 2 || n > (1u << 20) || (n & (n - 1)))
      return bad("TSU_SHM_RING_SLOTS", v, "a power of two between 2 and 1048576");
    cfg.shm_ring_slots = static_cast<uint32_t>(n);
  }
  if (const char* v = getenv_fn("TSU_SHM_SLOT_SIZE")) {
    std::size_t n;
    if (!parse_size(v, n) || n < 128 || n > (1u << 24) || n % 64)
      return bad("TSU_SHM_SLOT_SIZE", v, "a multiple of 64 between 128 and 16M");
    cfg.shm_slot_size = static_cast<uint32_t>(n);
  }
  if (const char* v = getenv_fn("TSU_AM_MEDIUM_MAX")) {
    if (!parse_size(v, cfg.am_medium_max)) return bad("TSU_AM_MEDIUM_MAX", v, "a size");
  }
  if (const char* v = getenv_fn("TSU_EAGER_MAX")) {
    if (!parse_size(v, cfg.eager_max)) return bad("TSU_EAGER_MAX", v, "a size");
  }
  if (const char* v = getenv_fn("TSU_SCEAGER_MIN")) {
    if (!parse_size(v, cfg.sceager_min)) return bad("TSU_SCEAGER_MIN", v, "a size");
  }
  if (const char* v = getenv_fn("TSU_SCEAGER")) {
    if (!parse_bool(v, cfg.sceager)) return bad("TSU_SCEAGER", v, "0 or 1");
  }
  if (const char* v = getenv_fn("TSU_COLL_LARGE_MIN")) {
    if (!parse_size(v, cfg.coll_large_min)) return bad("TSU_COLL_LARGE_MIN", v, "a size");
  }
  if (const char* v = getenv_fn("TSU_COLL_DIRECT_MIN")) {
    if (!parse_size(v, cfg.coll_direct_min)) return bad("TSU_COLL_DIRECT_MIN", v, "a size");
  }
  if (const char* v = getenv_fn("TSU_COLL_DIRECT")) {
    if (!parse_bool(v, cfg.coll_direct)) return bad("TSU_COLL_DIRECT", v, "0 or 1");
  }
  if (const char* v = getenv_fn("TSU_POSTED_SLOTS")) {
    uint64_t n;
    if (!parse_u64(v, n) || n < 1 || n > 4096) return bad("TSU_POSTED_SLOTS", v, "1..4096");
    cfg.posted_slots = static_cast<uint32_t>(n);
  }
  // The ring slot bounds what one message carries.
  const std::size_t slot_payload = cfg.shm_slot_size - 64;
  if (cfg.am_medium_max > slot_payload) cfg.am_medium_max = slot_payload;
  if (cfg.eager_max > slot_payload) cfg.eager_max = slot_payload;
  if (const char* v = getenv_fn("TSU_UDP_ADDR")) {
    if (!*v || std::strlen(v) > 15) return bad("TSU_UDP_ADDR", v, "an IPv4 address");
    cfg.udp_addr = v;
  }
  auto u32_in = [&](const char* var, uint32_t& out, uint64_t lo, uint64_t hi, bool pow2,
                    const char* expected) {
    const char* v = getenv_fn(var);
    if (!v) return TSU_OK;
    uint64_t n;
    if (!parse_u64(v, n) || n < lo || n > hi || (pow2 && (n & (n - 1)))) return bad(var, v, expected);
    out = static_cast<uint32_t>(n);
    return TSU_OK;
  };
  auto dur = [&](const char* var, uint64_t& out, uint64_t lo) {
    const char* v = getenv_fn(var);
    if (!v) return TSU_OK;
    uint64_t ns;
    if (!parse_duration(v, ns) || ns < lo) return bad(var, v, "a duration such as 500ms or 2s");
    out = ns;
    return TSU_OK;
  };
  tsu_status_t st;
  if ((st = u32_in("TSU_UDP_PORT", cfg.udp_port, 0, 65535, false, "0..65535")) != TSU_OK ||
      (st = u32_in("TSU_UDP_MTU", cfg.udp_mtu, 256, 65507, false, "256..65507")) != TSU_OK ||
      (st = u32_in("TSU_UDP_WINDOW", cfg.udp_window, 2, 4096, true,
                   "a power of two between 2 and 4096")) != TSU_OK ||
      (st = u32_in("TSU_UDP_QUEUE", cfg.udp_queue, 2, 1u << 20, true,
                   "a power of two between 2 and 1048576")) != TSU_OK ||
      (st = u32_in("TSU_UDP_CWND_MIN", cfg.udp_cwnd_min, 1, 4096, false, "1..4096")) != TSU_OK ||
      (st = dur("TSU_UDP_RTO_INIT", cfg.udp_rto_init_ns, 10'000)) != TSU_OK ||
      (st = dur("TSU_UDP_RTO_MIN", cfg.udp_rto_min_ns, 10'000)) != TSU_OK ||
      (st = dur("TSU_UDP_KEEPALIVE", cfg.udp_keepalive_ns, 1'000'000)) != TSU_OK ||
      (st = dur("TSU_UDP_PEER_TIMEOUT", cfg.udp_peer_timeout_ns, 10'000'000)) != TSU_OK)
    return st;
  if (const char* v = getenv_fn("TSU_UDP_MAX_MESSAGE")) {
    std::size_t s;
    if (!parse_size(v, s) || s < 1024 || s > (64u << 20))
      return bad("TSU_UDP_MAX_MESSAGE", v, "a size between 1K and 64M");
    cfg.udp_max_message = s;
  }
  if (const char* v = getenv_fn("TSU_UDP_GSO")) {
    if (!parse_bool(v, cfg.udp_gso)) return bad("TSU_UDP_GSO", v, "0 or 1");
  }
  if (const char* v = getenv_fn("TSU_UDP_GRO")) {
    if (!parse_bool(v, cfg.udp_gro)) return bad("TSU_UDP_GRO", v, "0 or 1");
  }
  if (const char* v = getenv_fn("TSU_UDP_AUTH")) {
    if (!parse_bool(v, cfg.udp_auth)) return bad("TSU_UDP_AUTH", v, "0 or 1");
  }
  if (const char* v = getenv_fn("TSU_UDP_SOCKBUF")) {
    std::size_t s;
    if (!parse_size(v, s) || s < 4096 || s > (1u << 30))
      return bad("TSU_UDP_SOCKBUF", v, "a size between 4K and 1G");
    cfg.udp_sockbuf = s;
  }
  if (cfg.udp_queue < cfg.udp_window) {
    error = "TSU_UDP_QUEUE (" + std::to_string(cfg.udp_queue) + ") must be >= TSU_UDP_WINDOW (" +
            std::to_string(cfg.udp_window) + ")";
    return TSU_ERR_CONFIG;
  }
  if (cfg.udp_keepalive_ns >= cfg.udp_peer_timeout_ns) {
    error = "TSU_UDP_KEEPALIVE must be shorter than TSU_UDP_PEER_TIMEOUT";
    return TSU_ERR_CONFIG;
  }
  if (const char* v = getenv_fn("TSU_UDP_IMPAIR")) cfg.udp_impair = v;
  if (const char* v = getenv_fn("TSU_UDP_TRACE")) cfg.udp_trace = v;
  return TSU_OK;
}

tsu_status_t config_apply_user(Config& cfg, const tsu_config_t* user, std::string& error) {
  if (!user) return TSU_OK;
  if (user->struct_size < offsetof(tsu_config_t, field_mask) + sizeof(user->field_mask)) {
    error = "tsu_config_t.struct_size is too small: set it to sizeof(tsu_config_t)";
    return TSU_ERR_CONFIG;
  }
  // Fields past the caller's struct_size are absent in older binaries.
  auto has = [&](uint64_t bit, std::size_t end) {
    return (user->field_mask & bit) && user->struct_size >= end;
  };
#define TSU_FIELD_END(f) (offsetof(tsu_config_t, f) + sizeof(user->f))
  const uint64_t known = TSU_CONFIG_SEGMENT_SIZE | TSU_CONFIG_RING_SIZE | TSU_CONFIG_PROGRESS_MODE |
                         TSU_CONFIG_BYPASS | TSU_CONFIG_SPIN_US | TSU_CONFIG_LOG_LEVEL |
                         TSU_CONFIG_STATS;
  if (user->field_mask & ~known) {
    error = "tsu_config_t.field_mask has unknown bits";
    return TSU_ERR_CONFIG;
  }
  if (has(TSU_CONFIG_SEGMENT_SIZE, TSU_FIELD_END(segment_size))) {
    if (user->segment_size < kMinSegment) {
      error = "tsu_config_t.segment_size must be at least 4096";
      return TSU_ERR_CONFIG;
    }
    cfg.segment_size = user->segment_size;
  }
  if (has(TSU_CONFIG_RING_SIZE, TSU_FIELD_END(ring_size))) {
    const uint32_t n = user->ring_size;
    if (n < kMinRing || n > kMaxRing || (n & (n - 1))) {
      error = "tsu_config_t.ring_size must be a power of two between 2 and 16777216";
      return TSU_ERR_CONFIG;
    }
    cfg.ring_size = n;
  }
  if (has(TSU_CONFIG_PROGRESS_MODE, TSU_FIELD_END(progress_mode))) {
    if (user->progress_mode != TSU_PROGRESS_THREAD && user->progress_mode != TSU_PROGRESS_MANUAL) {
      error = "tsu_config_t.progress_mode must be TSU_PROGRESS_THREAD or TSU_PROGRESS_MANUAL";
      return TSU_ERR_CONFIG;
    }
    cfg.progress_mode = static_cast<tsu_progress_mode_t>(user->progress_mode);
  }
  if (has(TSU_CONFIG_BYPASS, TSU_FIELD_END(bypass))) cfg.bypass = user->bypass != 0;
  if (has(TSU_CONFIG_SPIN_US, TSU_FIELD_END(spin_us))) cfg.spin_us = user->spin_us;
  if (has(TSU_CONFIG_LOG_LEVEL, TSU_FIELD_END(log_level))) {
    if (user->log_level < TSU_LOG_OFF || user->log_level > TSU_LOG_TRACE) {
      error = "tsu_config_t.log_level must be between TSU_LOG_OFF and TSU_LOG_TRACE";
      return TSU_ERR_CONFIG;
    }
    cfg.log_level = user->log_level;
  }
  if (has(TSU_CONFIG_STATS, TSU_FIELD_END(stats))) cfg.stats = user->stats != 0;
#undef TSU_FIELD_END
  return TSU_OK;
}

namespace {
std::string ns_text(uint64_t ns) {
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}
}  // namespace

std::vector<std::pair<std::string, std::string>> config_describe(const Config& cfg) {
  static const char* const levels[] = {"off", "error", "warn", "info", "debug", "trace"};
  return {
      {"TSU_SEGMENT_SIZE", std::to_string(cfg.segment_size)},
      {"TSU_RING_SIZE", std::to_string(cfg.ring_size)},
      {"TSU_PROGRESS", cfg.progress_mode == TSU_PROGRESS_MANUAL ? "manual" : "thread"},
      {"TSU_BYPASS", cfg.bypass ? "1" : "0"},
      {"TSU_SPIN_US", std::to_string(cfg.spin_us)},
      {"TSU_INLINE_EXEC", cfg.inline_exec ? "1" : "0"},
      {"TSU_YIELD", cfg.yield_idle < 0 ? "auto" : cfg.yield_idle ? "1" : "0"},
      {"TSU_LOG", levels[cfg.log_level]},
      {"TSU_STATS", cfg.stats ? "1" : "0"},
      {"TSU_NODE_ID", cfg.node_id.empty() ? "(host name)" : cfg.node_id},
      {"TSU_SHM_RING_SLOTS", std::to_string(cfg.shm_ring_slots)},
      {"TSU_SHM_SLOT_SIZE", std::to_string(cfg.shm_slot_size)},
      {"TSU_AM_MEDIUM_MAX", std::to_string(cfg.am_medium_max)},
      {"TSU_EAGER_MAX", std::to_string(cfg.eager_max)},
      {"TSU_SCEAGER_MIN", std::to_string(cfg.sceager_min)},
      {"TSU_SCEAGER", cfg.sceager ? "1" : "0"},
      {"TSU_POSTED_SLOTS", std::to_string(cfg.posted_slots)},
      {"TSU_COLL_LARGE_MIN", std::to_string(cfg.coll_large_min)},
      {"TSU_COLL_DIRECT", cfg.coll_direct ? "1" : "0"},
      {"TSU_COLL_DIRECT_MIN", std::to_string(cfg.coll_direct_min)},
      {"TSU_UDP_ADDR", cfg.udp_addr.empty() ? "(derived)" : cfg.udp_addr},
      {"TSU_UDP_PORT", std::to_string(cfg.udp_port)},
      {"TSU_UDP_MTU", std::to_string(cfg.udp_mtu)},
      {"TSU_UDP_WINDOW", std::to_string(cfg.udp_window)},
      {"TSU_UDP_QUEUE", std::to_string(cfg.udp_queue)},
      {"TSU_UDP_MAX_MESSAGE", std::to_string(cfg.udp_max_message)},
      {"TSU_UDP_RTO_INIT", ns_text(cfg.udp_rto_init_ns)},
      {"TSU_UDP_RTO_MIN", ns_text(cfg.udp_rto_min_ns)},
      {"TSU_UDP_KEEPALIVE", ns_text(cfg.udp_keepalive_ns)},
      {"TSU_UDP_PEER_TIMEOUT", ns_text(cfg.udp_peer_timeout_ns)},
      {"TSU_UDP_SOCKBUF", std::to_string(cfg.udp_sockbuf)},
      {"TSU_UDP_GSO", cfg.udp_gso ? "1" : "0"},
      {"TSU_UDP_GRO", cfg.udp_gro ? "1" : "0"},
      {"TSU_UDP_AUTH", cfg.udp_auth ? "1" : "0"},
      {"TSU_UDP_CWND_MIN", std::to_string(cfg.udp_cwnd_min)},
      {"TSU_UDP_IMPAIR", cfg.udp_impair.empty() ? "(off)" : cfg.udp_impair},
      {"TSU_UDP_TRACE", cfg.udp_trace.empty() ? "(off)" : cfg.udp_trace},
  };
}

}  // namespace tsu::core
