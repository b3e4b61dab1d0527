// Messages from tsurun itself, always prefixed "tsurun: " so they stand out
// from the ranks' forwarded output.
#pragma once

#include <string>

namespace tsurun {

// Writes "tsurun: <msg>\n" to stderr in one write(2), so it is not split by
// other writers; preserves errno.
void report(const std::string& msg);

}  // namespace tsurun
