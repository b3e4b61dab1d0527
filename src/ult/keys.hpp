// Thread-local keys: a process-wide table of keys (id -> destructor), and
// per-thread value arrays (a ULT's allocated at its first set; a pthread's
// in a thread_local array).
#pragma once

#include "thread.hpp"

namespace tsu::ult {

void run_key_destructors(Ult* u) noexcept;  // in the ending ULT, before it ends
void free_key_values(Ult* u) noexcept;      // after it ended

}  // namespace tsu::ult
