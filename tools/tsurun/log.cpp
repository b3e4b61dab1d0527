#include "log.hpp"

#include <unistd.h>

#include <cerrno>

namespace tsurun {

void report(const std::string& msg) {
  const int saved = errno;
  const std::string line = "tsurun: " + msg + "\n";
  size_t done = 0;
  while (done < line.size()) {
    const ssize_t n = ::write(STDERR_FILENO, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  errno = saved;
}

}  // namespace tsurun
