// The three figures of seed 000 (listings 6/7) for one RMA operation, each
// measured by every worker thread at once:
//   latency  = request -> callback, one request outstanding per thread,
//   overhead = time the tsu_try_* call takes to return, many outstanding,
//   rate     = completions per second with a window of outstanding requests.
// Each call measures one repetition and returns its figure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "../common/threads.hpp"

namespace bench {

enum class RmaOp { kGet, kPut, kFetchAdd };

const char* rma_op_name(RmaOp op);
std::optional<RmaOp> rma_op_from_name(const std::string& name);

struct RmaPoint {
  RmaOp op = RmaOp::kPut;
  std::size_t size = 8;          // bytes; fetch-add is always 8
  int threads = 1;
  std::size_t region_bytes = 0;  // per-thread region (see TsuSession::fits)
  uint32_t target_rank = 1;
  double duration_ms = 20;
  int window = 64;               // outstanding requests per thread (overhead, rate)
  // rate only: no callback (tsu_cb_none); each window of requests is completed
  // by tsu_quiet() -- the completion model of UCX's *_nbi + flush and of MPI's
  // RMA + MPI_Win_flush.
  bool quiet_completion = false;
  // with quiet_completion: issue with the implicit-completion calls
  // (tsu_try_put_nbi, tsu_try_get_nbi, tsu_try_atomic_nbi) instead.
  bool implicit = false;
};

struct OverheadFigure {
  double mean_ns = 0;          // mean over accepted calls, timer cost removed
  double eagain_fraction = 0;  // EAGAIN / (accepted + EAGAIN)
};

struct RateFigure {
  double per_second = 0;  // completions/s summed over threads
};

class RmaKernels {
 public:
  RmaKernels(WorkerPool& pool, Waiter waiter) : pool_(pool), waiter_(waiter) {}

  // nullopt if a request failed; error() says why.
  std::optional<double> latency_ns(const RmaPoint& p);
  std::optional<OverheadFigure> overhead(const RmaPoint& p);
  std::optional<RateFigure> rate(const RmaPoint& p);

  const std::string& error() const noexcept { return error_; }

 private:
  WorkerPool& pool_;
  Waiter waiter_;
  std::string error_;
};

}  // namespace bench
