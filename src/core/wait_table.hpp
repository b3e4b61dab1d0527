// Parked waiters keyed by address, like futexes: a blocking call inside a
// user-level thread parks on the address of what it waits for (a counter, a
// thread's quiet count, a collective's done flag), and the completion side
// calls notify(address) after publishing the completion.  Only the address
// is used: notify never reads the object, so a waiter may return and free
// it as soon as it sees the completion (a reused address costs a spurious
// wake-up; waiters re-check their condition).
//
// No lost wake-up (Dekker style, seq_cst on both sides): the waiter
// increments its bucket's count, then reads its condition; the completer
// publishes the completion, then reads the bucket's count.  In the single
// order of seq_cst operations one of them comes second and sees the other:
// the waiter sees the completion and does not park, or the completer sees
// the count and wakes it (Waiter handles a wake before the park itself).
#pragma once

#include <cstdint>

#include "core/wait_hook.hpp"

namespace tsu::core::wait_table {

// Parks the calling thread on `key` while still_waiting() (which must read
// the condition with seq_cst loads) holds, through the pthread's park hook.
// Returns true after one wake-up, or at once if the condition holds already;
// false if the pthread has no park hook or it refused to park (the caller
// then waits its usual way).  Spurious returns are possible: re-check.
bool park_while(const void* key, uint32_t flags, bool (*still_waiting)(const void* arg),
                const void* arg) noexcept;

// The same wait for a thread with no park hook (a plain pthread, while a
// progress thread completes what it waits for): sleeps in the kernel until
// notify(key), the condition stops holding, or `timeout_ns` passes (a safety
// net).  Returns at once if the condition holds already.  Spurious returns
// are possible: re-check.
void sleep_while(const void* key, bool (*still_waiting)(const void* arg), const void* arg,
                 uint64_t timeout_ns) noexcept;

// Wakes every thread parked on `key`.  Cheap when none is parked in its
// bucket: one load.  Call after the completion is published (seq_cst).
void notify(const void* key) noexcept;

}  // namespace tsu::core::wait_table
