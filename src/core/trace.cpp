// The timeline's recorder and writer (trace.hpp).  One session per
// tsu_init..tsu_finalize; per-thread buffers, written to the file when full
// and at stop().
#include "core/trace.hpp"

#include <pthread.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <vector>

#include "util/clock.hpp"

namespace tsu::core::trace {

std::atomic<bool> g_on{false};

const EventType kIssueCopy{"issue copy", "request", 'i', {"dst", "src", "bytes"}};
const EventType kIssueAtomic{"issue atomic", "request", 'i', {"rank", "op", "type"}};
const EventType kBypass{"bypass", "request", 'i', {"status", nullptr, nullptr}};
const EventType kRequestBegin{"request", "request", 'b', {"atomic", "dst", "src"}};
const EventType kRequestEnd{"request", "request", 'e', {"status", nullptr, nullptr}};
const EventType kPass{"progress", "engine", 'X', {"work", "callbacks", nullptr}};
const EventType kSleep{"sleep", "engine", 'X', {"timeout_us", "rung", nullptr}};
const EventType kDoorbell{"engine asleep", "engine", 'i', {nullptr, nullptr, nullptr}};
const EventType kInlineRun{"inline run", "engine", 'i', {"finished", nullptr, nullptr}};
const EventType kRingFull{"ring full", "request", 'i', {"dst", "src", nullptr}};

namespace {

struct Event {
  uint64_t ts_ns, dur_ns, id;
  uint64_t a[3];
  const EventType* type;
  const char* name;
};

// One thread's events.  The owner appends and publishes `count` with a
// release store; a writer (the owner when full, stop() at finalize) reads
// events [0, count) after an acquire load, under the session mutex.
struct Buffer {
  static constexpr uint32_t kEvents = 4096;  // 256 KiB
  uint32_t tid = 0;
  std::atomic<uint32_t> count{0};
  Event ev[kEvents];
};

struct Session {
  std::mutex mu;
  std::FILE* file = nullptr;  // guarded by mu
  uint32_t rank = 0;
  uint32_t next_tid = 1;
  bool first = true;  // no event written yet (comma placement)
  std::vector<std::unique_ptr<Buffer>> buffers;
};

Session g_session;
// Bumped by every start(): a thread's buffer from an earlier session is
// never reused (it was freed by that session's stop()).
std::atomic<uint64_t> g_generation{0};
thread_local Buffer* t_buffer = nullptr;
thread_local uint64_t t_generation = 0;

void write_json_string(std::string& out, const char* s) {
  out += '"';
  for (; *s; ++s) {
    const unsigned char c = static_cast<unsigned char>(*s);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\u%04x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  out += '"';
}

void append_time(std::string& out, const char* key, uint64_t ns) {
  char text[64];
  std::snprintf(text, sizeof text, ",\"%s\":%" PRIu64 ".%03" PRIu64, key, ns / 1000, ns % 1000);
  out += text;
}

// mu held.
void append_event(std::string& out, const Event& e, uint32_t tid) {
  const EventType& t = *e.type;
  out += g_session.first ? "\n" : ",\n";
  g_session.first = false;
  out += "{\"name\":";
  write_json_string(out, e.name ? e.name : t.name);
  char text[96];
  std::snprintf(text, sizeof text, ",\"cat\":\"%s\",\"ph\":\"%c\",\"pid\":%u,\"tid\":%u", t.category,
                t.phase, g_session.rank, tid);
  out += text;
  append_time(out, "ts", e.ts_ns);
  if (t.phase == 'X') append_time(out, "dur", e.dur_ns);
  if (t.phase == 'i') out += ",\"s\":\"t\"";
  if (t.phase == 'b' || t.phase == 'e' || t.phase == 'C') {
    std::snprintf(text, sizeof text, ",\"id\":\"%" PRIu64 "\"", e.id);
    out += text;
  }
  out += ",\"args\":{";
  bool first_arg = true;
  for (int i = 0; i < 3; ++i) {
    if (!t.args[i]) continue;
    // Signed: statuses are negative codes; counts and ranks fit either way.
    std::snprintf(text, sizeof text, "%s\"%s\":%" PRId64, first_arg ? "" : ",", t.args[i],
                  static_cast<int64_t>(e.a[i]));
    out += text;
    first_arg = false;
  }
  out += "}}";
}

// mu held.
void append_metadata(std::string& out, const char* what, uint32_t tid, const char* value) {
  out += g_session.first ? "\n" : ",\n";
  g_session.first = false;
  char text[128];
  std::snprintf(text, sizeof text, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"args\":{\"name\":",
                what, g_session.rank, tid);
  out += text;
  write_json_string(out, value);
  out += "}}";
}

// mu held: writes the buffer's published events and empties it.
void flush_locked(Buffer& b) {
  const uint32_t n = b.count.load(std::memory_order_acquire);
  if (!n || !g_session.file) return;
  std::string out;
  out.reserve(std::size_t{n} * 160);
  for (uint32_t i = 0; i < n; ++i) append_event(out, b.ev[i], b.tid);
  std::fwrite(out.data(), 1, out.size(), g_session.file);
  b.count.store(0, std::memory_order_relaxed);
}

// The calling thread's buffer in the current session, or null when tracing
// has stopped.
Buffer* thread_buffer() {
  const uint64_t gen = g_generation.load(std::memory_order_acquire);
  if (t_generation == gen && t_buffer) [[likely]] return t_buffer;
  std::lock_guard lock(g_session.mu);
  if (!g_session.file || g_generation.load(std::memory_order_relaxed) != gen) return nullptr;
  auto b = std::make_unique<Buffer>();
  b->tid = g_session.next_tid++;
  char name[32] = "";
  if (pthread_getname_np(pthread_self(), name, sizeof name) != 0 || !name[0])
    std::snprintf(name, sizeof name, "thread %u", b->tid);
  std::string out;
  append_metadata(out, "thread_name", b->tid, name);
  std::fwrite(out.data(), 1, out.size(), g_session.file);
  t_buffer = b.get();
  t_generation = gen;
  g_session.buffers.push_back(std::move(b));
  return t_buffer;
}

}  // namespace

uint64_t now_if_on() noexcept { return util::now_ns(); }

void record(const EventType& type, uint64_t id, uint64_t a0, uint64_t a1, uint64_t a2,
            const char* name, uint64_t ts_ns, uint64_t dur_ns) noexcept {
  Buffer* b = nullptr;
  try {
    b = thread_buffer();
  } catch (...) {  // out of memory: drop the event
    return;
  }
  if (!b) return;
  uint32_t n = b->count.load(std::memory_order_relaxed);
  if (n == Buffer::kEvents) {
    std::lock_guard lock(g_session.mu);
    flush_locked(*b);
    n = b->count.load(std::memory_order_relaxed);
    if (n == Buffer::kEvents) return;  // the file is gone (stop() ran): drop
  }
  b->ev[n] = Event{ts_ns ? ts_ns : util::now_ns(), dur_ns, id, {a0, a1, a2}, &type, name};
  b->count.store(n + 1, std::memory_order_release);
}

void span(const EventType& type, uint64_t start_ns, uint64_t a0, uint64_t a1,
          uint64_t a2) noexcept {
  if (!on()) return;
  const uint64_t now = util::now_ns();
  record(type, 0, a0, a1, a2, nullptr, start_ns, now - start_ns);
}

std::string file_for_rank(const std::string& pattern, uint32_t rank) {
  const std::string r = std::to_string(rank);
  std::string out;
  bool substituted = false;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'r') {
      out += r;
      ++i;
      substituted = true;
    } else {
      out += pattern[i];
    }
  }
  return substituted ? out : out + "." + r + ".json";
}

tsu_status_t start(const std::string& pattern, uint32_t rank, std::string& error) {
  std::lock_guard lock(g_session.mu);
  if (g_session.file) return TSU_OK;  // already on (not expected: one session at a time)
  const std::string path = file_for_rank(pattern, rank);
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) {
    error = "TSU_TRACE: cannot create '" + path + "': " + std::strerror(errno);
    return TSU_ERR_SYSTEM;
  }
  g_session.file = f;
  g_session.rank = rank;
  g_session.next_tid = 1;
  g_session.first = true;
  // Monotonic timestamps (all ranks of a host share the clock); the offset
  // to the wall clock lets tools/tsu-trace-merge align ranks of other hosts.
  timespec mono{}, real{};
  clock_gettime(CLOCK_MONOTONIC, &mono);
  clock_gettime(CLOCK_REALTIME, &real);
  const int64_t offset = (int64_t{real.tv_sec} - mono.tv_sec) * 1'000'000'000 +
                         (int64_t{real.tv_nsec} - mono.tv_nsec);
  std::fprintf(f,
               "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"tsunagi %s\","
               "\"rank\":%u,\"clock\":\"monotonic\",\"realtime_minus_monotonic_ns\":%" PRId64
               "},\n\"traceEvents\":[",
               TSU_VERSION_STRING, rank, offset);
  std::string out;
  const std::string process = "rank " + std::to_string(rank);
  append_metadata(out, "process_name", 0, process.c_str());
  out += ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + std::to_string(rank) +
         ",\"tid\":0,\"args\":{\"sort_index\":" + std::to_string(rank) + "}}";
  std::fwrite(out.data(), 1, out.size(), f);
  g_generation.fetch_add(1, std::memory_order_release);
  g_on.store(true, std::memory_order_release);
  return TSU_OK;
}

void stop() noexcept {
  std::lock_guard lock(g_session.mu);
  if (!g_session.file) return;
  g_on.store(false, std::memory_order_relaxed);
  for (auto& b : g_session.buffers) flush_locked(*b);
  std::fputs("\n]}\n", g_session.file);
  std::fclose(g_session.file);
  g_session.file = nullptr;
  g_session.buffers.clear();
  // Threads still holding a pointer to a freed buffer see a new generation.
  g_generation.fetch_add(1, std::memory_order_release);
}

}  // namespace tsu::core::trace
