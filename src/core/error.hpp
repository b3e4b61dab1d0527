// Error reporting: the first function to detect an error records a detailed,
// thread-local message (tsu_last_error) and logs it at debug level.
#pragma once

#include <cstdarg>

#include "tsunagi/tsunagi.h"

namespace tsu::core {

// Records "fmt..." as the calling thread's last error and returns `status`.
tsu_status_t fail(tsu_status_t status, const char* fmt, ...) noexcept
    __attribute__((format(printf, 2, 3)));

const char* last_error() noexcept;
void clear_last_error() noexcept;

}  // namespace tsu::core
