#include "output_forwarder.hpp"

#include <unistd.h>

#include <cerrno>

namespace tsurun {

namespace {
// A line longer than this is written in pieces rather than held forever.
constexpr size_t kMaxPartial = 64 * 1024;
}  // namespace

OutputForwarder::~OutputForwarder() {
  for (auto& s : streams_) close_stream(s);
}

void OutputForwarder::add_stream(uint32_t rank, int fd, int dest) {
  streams_.push_back(Stream{rank, fd, dest, {}});
}

void OutputForwarder::add_pollfds(std::vector<pollfd>& fds) const {
  for (const auto& s : streams_) fds.push_back(pollfd{s.fd, POLLIN, 0});  // fd -1 is ignored
}

void OutputForwarder::handle(std::span<const pollfd> fds) {
  for (size_t i = 0; i < streams_.size() && i < fds.size(); ++i) {
    Stream& s = streams_[i];
    if (s.fd < 0 || fds[i].revents == 0) continue;
    if (read_some(s) == ReadResult::kEnd) {
      emit_lines(s, true);
      close_stream(s);
    }
  }
}

bool OutputForwarder::all_closed() const {
  for (const auto& s : streams_)
    if (s.fd >= 0) return false;
  return true;
}

void OutputForwarder::drain_and_close_all() {
  for (auto& s : streams_) {
    if (s.fd < 0) continue;
    // Pipes are non-blocking, so this stops at EAGAIN as well as at EOF.
    while (read_some(s) == ReadResult::kData) {
    }
    emit_lines(s, true);
    close_stream(s);
  }
}

OutputForwarder::ReadResult OutputForwarder::read_some(Stream& s) {
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(s.fd, buf, sizeof(buf));
    if (n > 0) {
      s.partial.append(buf, static_cast<size_t>(n));
      emit_lines(s, false);
      return ReadResult::kData;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return ReadResult::kWouldBlock;
    return ReadResult::kEnd;  // EOF or a real error: the stream is done
  }
}

void OutputForwarder::emit_lines(Stream& s, bool flush_partial) {
  const std::string prefix = tag_ ? "[" + std::to_string(s.rank) + "] " : "";
  std::string out;
  size_t start = 0;
  for (size_t nl; (nl = s.partial.find('\n', start)) != std::string::npos; start = nl + 1) {
    out += prefix;
    out.append(s.partial, start, nl + 1 - start);
  }
  s.partial.erase(0, start);
  if (!s.partial.empty() && (flush_partial || s.partial.size() > kMaxPartial)) {
    out += prefix;
    out += s.partial;
    if (tag_) out += '\n';  // the next tagged line must start on its own line
    s.partial.clear();
  }
  if (!out.empty()) write_out(s.dest, out);
}

void OutputForwarder::write_out(int dest, const std::string& text) {
  const size_t slot = dest == STDOUT_FILENO ? 1 : 2;
  if (dest_broken_[slot]) return;
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(dest, text.data() + done, text.size() - done);
    if (n > 0) {
      done += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      // Our stdout is non-blocking (inherited): wait for room rather than drop output.
      pollfd p{dest, POLLOUT, 0};
      ::poll(&p, 1, -1);
    } else {
      dest_broken_[slot] = true;  // e.g. EPIPE from `tsurun ... | head`; keep the job running
      return;
    }
  }
}

void OutputForwarder::close_stream(Stream& s) {
  if (s.fd >= 0) ::close(s.fd);
  s.fd = -1;
}

}  // namespace tsurun
