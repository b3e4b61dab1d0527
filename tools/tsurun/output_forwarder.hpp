// Copies the ranks' stdout/stderr pipes to tsurun's own stdout/stderr.
// Only whole lines are written, so lines of different ranks never
// interleave mid-line; with tagging each line gets a "[RANK] " prefix.
#pragma once

#include <poll.h>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace tsurun {

class OutputForwarder {
 public:
  explicit OutputForwarder(bool tag) : tag_(tag) {}
  ~OutputForwarder();
  OutputForwarder(const OutputForwarder&) = delete;
  OutputForwarder& operator=(const OutputForwarder&) = delete;

  // Takes ownership of `fd` (read end of a rank's pipe); output goes to `dest`.
  void add_stream(uint32_t rank, int fd, int dest);
  // Appends one pollfd per open stream; handle() gets the same slice back.
  void add_pollfds(std::vector<pollfd>& fds) const;
  void handle(std::span<const pollfd> fds);
  bool all_closed() const;
  // Reads whatever is buffered without blocking, flushes partial lines and
  // closes every stream (used when a descendant of a rank holds a pipe open).
  void drain_and_close_all();

 private:
  struct Stream {
    uint32_t rank;
    int fd;  // -1 once closed
    int dest;
    std::string partial;  // bytes after the last newline
  };
  enum class ReadResult { kData, kWouldBlock, kEnd };
  ReadResult read_some(Stream& s);
  void emit_lines(Stream& s, bool flush_partial);
  void write_out(int dest, const std::string& text);
  void close_stream(Stream& s);

  bool tag_;
  bool dest_broken_[3] = {false, false, false};  // a reader of our stdout/stderr went away
  std::vector<Stream> streams_;
};

}  // namespace tsurun
