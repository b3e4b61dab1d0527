// The timeline (TSU_TRACE=FILE, docs/trace.md): Chrome trace-event JSON, one
// file per rank, that Perfetto and chrome://tracing open.
//
// Cost when off: every hook is `if (trace::on())` around an out-of-line call,
// and on() is one relaxed load of a process-wide flag (a plain `mov` + a
// never-taken branch).  Nothing else runs, no clock is read.
//
// Usage:
//   TSU_TRACE(trace::kDoorbell, 0, 0, 0);                 // an instant
//   const uint64_t t0 = trace::start_time();              // 0 when off
//   ... work ...
//   TSU_TRACE_SPAN(trace::kPass, t0, commands, msgs, cbs); // a complete ('X') event
//   TSU_TRACE_ASYNC(trace::kRequestBegin, id, a0, a1, a2);   // 'b'/'e' pairs by id
//
// Recording: each thread appends to its own buffer (no lock, no atomic
// read-modify-write); a full buffer is written to the file under the
// session's mutex, and tsu_finalize writes what is left.  An event type is a
// static descriptor (name, category, phase, argument names): a module names
// its own events next to the code that emits them.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "tsunagi/tsunagi.h"

namespace tsu::core::trace {

// What one kind of event looks like in the file.
struct EventType {
  const char* name;      // event name (the "name" field)
  const char* category;  // "cat": request, engine, udp, coll
  char phase;            // 'i' instant, 'X' complete, 'b'/'e' async, 'C' counter
  const char* args[3];   // argument names; nullptr: unused
};

// The flag every hook tests.  Written only by start()/stop() (tsu_init and
// tsu_finalize); relaxed: a hook that races with either may drop or add one
// event, never corrupt a buffer (start/stop publish the session under its
// mutex and by the thread start/join of the progress thread).
// Hidden: the hooks compile to one direct load (no GOT indirection) even
// in the shared library.
extern std::atomic<bool> g_on [[gnu::visibility("hidden")]];

inline bool on() noexcept { return g_on.load(std::memory_order_relaxed); }

// Out of line and cold: the hooks' bodies stay off the hot paths' code.
// `name`, when not null, replaces type.name (a static string, e.g. a
// collective's name).  `ts_ns` 0 means now.
[[gnu::cold, gnu::noinline]] void record(const EventType& type, uint64_t id, uint64_t a0,
                                         uint64_t a1, uint64_t a2, const char* name = nullptr,
                                         uint64_t ts_ns = 0, uint64_t dur_ns = 0) noexcept;
// A complete event from `start_ns` to now (nothing when start_ns is 0:
// tracing was off when the span began).
[[gnu::cold, gnu::noinline]] void span(const EventType& type, uint64_t start_ns, uint64_t a0,
                                       uint64_t a1, uint64_t a2) noexcept;
[[gnu::cold, gnu::noinline]] uint64_t now_if_on() noexcept;

// A span's start: the time when tracing is on, else 0 (no clock read).
inline uint64_t start_time() noexcept { return on() ? now_if_on() : 0; }

// FILE with "%r" replaced by the rank, or FILE.<rank>.json when it has none.
std::string file_for_rank(const std::string& pattern, uint32_t rank);

// Opens the rank's file and turns tracing on (tsu_init, after the runtime is
// up).  TSU_ERR_SYSTEM with the reason when the file cannot be created.
tsu_status_t start(const std::string& pattern, uint32_t rank, std::string& error);
// Turns tracing off, writes every thread's remaining events and closes the
// file (tsu_finalize, after the progress thread has stopped).  No-op when off.
void stop() noexcept;

// Event types of the core and the runtime (other modules declare their own).
extern const EventType kIssueCopy;     // a put/get/copy handed to the engine
extern const EventType kIssueAtomic;   // an atomic handed to the engine
extern const EventType kBypass;        // a request completed in the caller (bypass)
extern const EventType kRequestBegin;  // the executor started a request (async begin)
extern const EventType kRequestEnd;    // its record finished (async end)
extern const EventType kPass;          // a progress pass that did work
extern const EventType kSleep;         // the engine slept
extern const EventType kDoorbell;      // an issuer found the engine asleep (it rings
                                       // the doorbell or runs the ring inline)
extern const EventType kInlineRun;     // an issuer started the ring's commands itself
extern const EventType kRingFull;      // a request refused with TSU_EAGAIN (ring full)

}  // namespace tsu::core::trace

#define TSU_TRACE(type, a0, a1, a2)                                                   \
  do {                                                                                \
    if (::tsu::core::trace::on()) [[unlikely]]                                        \
      ::tsu::core::trace::record(type, 0, static_cast<uint64_t>(a0),                  \
                                 static_cast<uint64_t>(a1), static_cast<uint64_t>(a2)); \
  } while (0)

#define TSU_TRACE_ASYNC(type, id, a0, a1, a2)                                         \
  do {                                                                                \
    if (::tsu::core::trace::on()) [[unlikely]]                                        \
      ::tsu::core::trace::record(type, static_cast<uint64_t>(id),                     \
                                 static_cast<uint64_t>(a0), static_cast<uint64_t>(a1), \
                                 static_cast<uint64_t>(a2));                          \
  } while (0)

// An event whose name is a static string chosen at the call (a collective's).
#define TSU_TRACE_NAMED(type, name, id, a0, a1, a2)                                   \
  do {                                                                                \
    if (::tsu::core::trace::on()) [[unlikely]]                                        \
      ::tsu::core::trace::record(type, static_cast<uint64_t>(id),                     \
                                 static_cast<uint64_t>(a0), static_cast<uint64_t>(a1), \
                                 static_cast<uint64_t>(a2), name);                    \
  } while (0)

#define TSU_TRACE_SPAN(type, t0, a0, a1, a2)                                          \
  do {                                                                                \
    if ((t0) != 0) [[unlikely]]                                                       \
      ::tsu::core::trace::span(type, t0, static_cast<uint64_t>(a0),                   \
                               static_cast<uint64_t>(a1), static_cast<uint64_t>(a2)); \
  } while (0)
