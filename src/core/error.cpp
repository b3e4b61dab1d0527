#include "core/error.hpp"

#include <cerrno>
#include <cstdio>

#include "core/log.hpp"

namespace tsu::core {

namespace {
thread_local char t_last_error[320];
}

tsu_status_t fail(tsu_status_t status, const char* fmt, ...) noexcept {
  const int saved_errno = errno;
  va_list ap;
  va_start(ap, fmt);
  std::vsnprintf(t_last_error, sizeof t_last_error, fmt, ap);
  va_end(ap);
  TSU_LOG_DEBUG("%s (%s)", t_last_error, tsu_strerror(status));
  errno = saved_errno;
  return status;
}

const char* last_error() noexcept { return t_last_error; }
void clear_last_error() noexcept { t_last_error[0] = '\0'; }

}  // namespace tsu::core

extern "C" {

const char* tsu_strerror(tsu_status_t status) {
  switch (status) {
    case TSU_OK: return "success";
    case TSU_EAGAIN: return "resource temporarily unavailable, try again";
    case TSU_ERR_INVALID_ARG: return "invalid argument";
    case TSU_ERR_NULL_POINTER: return "required pointer is NULL";
    case TSU_ERR_NOT_INITIALIZED: return "tsunagi is not initialized";
    case TSU_ERR_ALREADY_INITIALIZED: return "tsunagi is already initialized";
    case TSU_ERR_BAD_RANK: return "rank out of range";
    case TSU_ERR_BAD_SEGMENT: return "unknown or freed segment";
    case TSU_ERR_OUT_OF_BOUNDS: return "address range outside the segment";
    case TSU_ERR_MISALIGNED: return "atomic target is not naturally aligned";
    case TSU_ERR_UNSUPPORTED: return "operation not supported for this target";
    case TSU_ERR_UNREACHABLE: return "no transport reaches the target rank";
    case TSU_ERR_NO_MEMORY: return "out of memory";
    case TSU_ERR_SYSTEM: return "operating-system call failed";
    case TSU_ERR_BOOTSTRAP: return "bootstrap service failed";
    case TSU_ERR_CONFIG: return "invalid configuration";
    case TSU_ERR_PEER_LOST: return "peer lost";
    case TSU_ERR_TRUNCATED: return "message truncated";
    case TSU_ERR_CANCELED: return "request canceled";
    case TSU_ERR_LIMIT: return "fixed limit reached";
    case TSU_ERR_DEPENDENCY: return "a request it followed failed";
    default: return "unknown status";
  }
}

const char* tsu_last_error(void) { return tsu::core::last_error(); }

const char* tsu_version(void) { return TSU_VERSION_STRING; }

}  // extern "C"
