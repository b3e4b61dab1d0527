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
}  // namespace

bool parse_u64(const char* text, uint64_t& out) {
  if (!text || !*text) return false;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno || end == text || *end || text[0] == '-') return false;
  out = v;
  return true;
}

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

std::string duration_text(uint64_t ns) {
  if (ns % 1'000'000'000 == 0) return std::to_string(ns / 1'000'000'000) + "s";
  if (ns % 1'000'000 == 0) return std::to_string(ns / 1'000'000) + "ms";
  if (ns % 1'000 == 0) return std::to_string(ns / 1'000) + "us";
  return std::to_string(ns) + "ns";
}

const SettingsTable<Config>& config_settings() {
  using C = Config;
  static const SettingsTable<Config> table = [] {
    SettingsTable<Config> t{"core", {}};
    auto& r = t.rows;
    r.push_back(size_setting<C>("TSU_SEGMENT_SIZE", "64M",
                                "bytes of each rank's main shared segment (K/M/G suffixes)",
                                &C::segment_size, kMinSegment, SIZE_MAX,
                                "a size of at least 4096 bytes, e.g. 64M"));
    r.push_back(u32_setting<C>("TSU_RING_SIZE", "1024",
                               "slots in the progress engine's command ring (power of two)",
                               &C::ring_size, kMinRing, kMaxRing, true,
                               "a power of two between 2 and 16777216"));
    r.push_back({"TSU_PROGRESS", "thread",
                 "thread: a progress thread per process; manual: call tsu_progress()",
                 "'thread' or 'manual'",
                 [](const char* v, C& c) {
                   if (!strcasecmp(v, "thread")) c.progress_mode = TSU_PROGRESS_THREAD;
                   else if (!strcasecmp(v, "manual")) c.progress_mode = TSU_PROGRESS_MANUAL;
                   else return false;
                   return true;
                 },
                 [](const C& c) {
                   return std::string(c.progress_mode == TSU_PROGRESS_MANUAL ? "manual" : "thread");
                 }});
    r.push_back(bool_setting<C>("TSU_BYPASS", "1",
                                "1: intra-node RMA and atomics run in the caller; 0: through the engine",
                                &C::bypass));
    r.push_back({"TSU_SPIN_US", "auto",
                 "most microseconds an idle progress thread spins before it sleeps (adaptive: "
                 "less when idle gaps are longer or the spin is preempted); auto: 100 when the "
                 "node has two CPUs per rank, else 20",
                 "0..10000000 or auto",
                 [](const char* v, C& c) {
                   uint64_t n = 0;
                   if (!strcasecmp(v, "auto")) c.spin_us = Config::kSpinAuto;
                   else if (parse_u64(v, n) && n <= 10'000'000) c.spin_us = static_cast<uint32_t>(n);
                   else return false;
                   return true;
                 },
                 [](const C& c) {
                   return c.spin_us == Config::kSpinAuto ? std::string("auto") : std::to_string(c.spin_us);
                 }});
    r.push_back(u32_setting<C>("TSU_PROGRESS_THREADS", "1",
                               "consumers of node-local requests handed to the engine (TSU_BYPASS=0 "
                               "or ranks not mapped here): the progress thread plus N-1 lanes, each "
                               "issuing thread served by one; thread progress only",
                               &C::progress_threads, 1, 64, false, "1 to 64"));
    r.push_back({"TSU_YIELD", "auto",
                 "1: tsu_progress() calls sched_yield when it found nothing to do (threads sharing "
                 "a CPU), and so do the ULT workers' waits; auto: when the node's ranks x busy "
                 "threads exceed the CPUs (busy: 1, or a ULT scheduler's workers; "
                 "tsu_set_busy_threads)",
                 "0, 1 or auto",
                 [](const char* v, C& c) {
                   bool on = false;
                   if (!strcasecmp(v, "auto")) c.yield_idle = -1;
                   else if (parse_bool(v, on)) c.yield_idle = on ? 1 : 0;
                   else return false;
                   return true;
                 },
                 [](const C& c) {
                   return std::string(c.yield_idle < 0 ? "auto" : c.yield_idle ? "1" : "0");
                 }});
    r.push_back({"TSU_LOG", "warn", "log level: off, error, warn, info, debug, trace",
                 "off, error, warn, info, debug or trace",
                 [](const char* v, C& c) { return parse_log_level(v, c.log_level); },
                 [](const C& c) {
                   static const char* const levels[] = {"off", "error", "warn", "info", "debug", "trace"};
                   return std::string(levels[c.log_level]);
                 }});
    r.push_back(bool_setting<C>("TSU_STATS", "0", "1: print per-rank counters to stderr at finalize",
                                &C::stats));
    r.push_back(text_setting<C>("TSU_TRACE", "(off)",
                                "write a Chrome trace-event timeline per rank to this file: %r is "
                                "replaced by the rank, else .<rank>.json is appended (docs/trace.md)",
                                &C::trace, 4000, "a file name of 1 to 4000 characters"));
    r.push_back(text_setting<C>("TSU_NODE_ID", "(host name)",
                                "node identity; ranks with equal ids share memory", &C::node_id,
                                200, "1 to 200 characters"));
    r.push_back(text_setting<C>("TSU_NET", "udp",
                                "the transport to ranks on other nodes (tsu-info lists those "
                                "built in)",
                                &C::net, 32, "a network transport's name, e.g. udp"));
    r.push_back(size_setting<C>("TSU_AM_MEDIUM_MAX", "8192",
                                "largest medium active-message payload (clamped to the slot payload, "
                                "TSU_SHM_SLOT_SIZE - 64)",
                                &C::am_medium_max, 0, SIZE_MAX, "a size"));
    r.push_back(size_setting<C>("TSU_EAGER_MAX", "8192",
                                "tagged messages up to this size go eager, larger ones rendezvous",
                                &C::eager_max, 0, SIZE_MAX, "a size"));
    r.push_back(size_setting<C>("TSU_SCEAGER_MIN", "512",
                                "single-copy eager is tried from this size up (measured crossover "
                                "here; paper: 256)",
                                &C::sceager_min, 0, SIZE_MAX, "a size"));
    r.push_back(bool_setting<C>("TSU_SCEAGER", "1",
                                "1: senders copy straight into an already posted receive (seed 004)",
                                &C::sceager));
    r.push_back(u32_setting<C>("TSU_POSTED_SLOTS", "64",
                               "posted receives per rank visible to node peers (single-copy eager)",
                               &C::posted_slots, 1, 4096, false, "1..4096"));
    r.push_back(size_setting<C>("TSU_COLL_LARGE_MIN", "64K",
                                "allreduce of this many bytes up: reduce-scatter + allgather "
                                "(recursive halving/doubling) instead of recursive doubling",
                                &C::coll_large_min, 0, SIZE_MAX, "a size"));
    r.push_back(bool_setting<C>("TSU_COLL_NODE", "1",
                                "1: collectives of a team whose members share a node go through "
                                "shared memory (flags and data in the layer area, large data by "
                                "Cross Memory Attach); 0: messages",
                                &C::coll_node));
    r.push_back(size_setting<C>("TSU_COLL_STAGE_MAX", "1M",
                                "node teams: data up to this many bytes per member is staged in "
                                "shared memory (two copies, pipelined); above it, read from the "
                                "peers' buffers by Cross Memory Attach (one copy, a system call)",
                                &C::coll_stage_max, 0, 1u << 20, "0..1M"));
    r.push_back(u32_setting<C>("TSU_COLL_STAGE_STREAM", "2",
                               "node teams write the stages with 0: plain stores, 1: non-temporal "
                               "stores (a stage line crosses between cores once per use, not "
                               "twice), 2: whichever the team's probes measure cheaper",
                               &C::coll_stage_stream, 0, 2, false, "0, 1 or 2"));
    return t;
  }();
  return table;
}

void clamp_to_slot(Config& cfg, uint32_t slot_size) {
  // The ring slot bounds what one message carries.
  const std::size_t slot_payload = slot_size - 64;
  if (cfg.am_medium_max > slot_payload) cfg.am_medium_max = slot_payload;
  if (cfg.eager_max > slot_payload) cfg.eager_max = slot_payload;
}

tsu_status_t config_from_env(Config& cfg, const GetEnv& getenv_fn, std::string& error) {
  return config_settings().apply(cfg, getenv_fn, error);
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
  if (has(TSU_CONFIG_SPIN_US, TSU_FIELD_END(spin_us))) {
    if (user->spin_us > 10'000'000) {
      error = "tsu_config_t.spin_us must be at most 10000000 (10 s)";
      return TSU_ERR_CONFIG;
    }
    cfg.spin_us = user->spin_us;
  }
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

}  // namespace tsu::core
