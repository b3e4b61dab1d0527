// A tsunagi job as the benchmarks see it: init/finalize, who measures, which
// path (bypass or engine) tsu_init chose, and the per-thread buffers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <tsunagi/tsunagi.h>

namespace bench {

class TsuSession {
 public:
  // tsu_init; on failure returns null with the reason in `error`.
  // `pin_rank`: first pin this rank to one CPU (pin_rank_from_env).
  static std::unique_ptr<TsuSession> start(std::string& error, bool pin_rank = false);
  ~TsuSession();  // tsu_finalize
  TsuSession(const TsuSession&) = delete;
  TsuSession& operator=(const TsuSession&) = delete;

  uint32_t rank() const noexcept { return rank_; }
  uint32_t size() const noexcept { return size_; }
  bool measures() const noexcept { return rank_ == 0; }
  // Rank 0 works on rank 1's memory; a job of one rank works on itself.
  uint32_t target_rank() const noexcept { return size_ > 1 ? 1 : 0; }
  // "bypass" or "engine": what TSU_BYPASS told tsu_init (default: bypass).
  const std::string& mode() const noexcept { return mode_; }
  bool manual_progress() const noexcept { return manual_progress_; }
  // "shm" (node peer), "self" (job of one rank) or "remote".
  const std::string& transport() const noexcept { return transport_; }
  std::size_t main_segment_size() const noexcept { return segment_size_; }

  // Each worker thread owns a region of `region_bytes` at offset
  // thread * region_bytes, both in this rank's main segment (local side) and in
  // the target's (remote side).  False, with a message, if it does not fit.
  bool fits(int threads, std::size_t region_bytes, std::string& error) const;

 private:
  TsuSession() = default;
  uint32_t rank_ = 0;
  uint32_t size_ = 1;
  std::string mode_;
  std::string transport_;
  bool manual_progress_ = false;
  std::size_t segment_size_ = 0;
};

// Bytes of one thread's region for operations of up to `max_size` bytes:
// whole pages, so threads never share a cache line or a page.
std::size_t region_bytes_for(std::size_t max_size);

}  // namespace bench
