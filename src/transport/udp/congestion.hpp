// Per-peer round-trip estimation and congestion control (header-only, no
// locking: owned by the peer's reliability state under the transport lock).
//
// RTT: Jacobson/Karels (RFC 6298) on timestamp echoes; RTO = srtt + 4 rttvar,
// clamped to [min_rto, max_rto], doubled on every timeout (back-off) and reset
// by the next valid sample.
// Congestion: AIMD in datagrams, NewReno style.  Slow start to ssthresh, then
// +1/cwnd per acknowledged datagram.  A timeout halves ssthresh and drops
// cwnd to the minimum.  A loss found by selective acks (fast retransmit) is
// classified first, as TCP Veno does: the datagrams queued on the path are
// estimated from the RTT rise, backlog = cwnd * (srtt - min_rtt) / srtt.
// Below kRandomLossBacklog (or an RTT rise under kQueueNoiseNs, what
// scheduling alone causes here) the path had no queue, so the loss was random
// (a lossy link, not congestion): the window only stops growing
// exponentially.  Otherwise it is multiplied by 0.7.  Either reacts once per
// recovery epoch (until everything sent before the loss is acknowledged).
// A bottleneck (tc tbf) still backs the sender off: its queue raises the RTT.
#pragma once

#include <algorithm>
#include <cstdint>

namespace tsu::transport::udp {

class RttEstimator {
 public:
  RttEstimator(uint64_t initial_rto_ns, uint64_t min_rto_ns, uint64_t max_rto_ns)
      : rto_(initial_rto_ns), min_rto_(min_rto_ns), max_rto_(max_rto_ns) {}

  void sample(uint64_t rtt_ns) noexcept {
    if (!srtt_) {
      srtt_ = rtt_ns;
      rttvar_ = rtt_ns / 2;
    } else {
      const uint64_t err = rtt_ns > srtt_ ? rtt_ns - srtt_ : srtt_ - rtt_ns;
      rttvar_ = (3 * rttvar_ + err) / 4;
      srtt_ = (7 * srtt_ + rtt_ns) / 8;
    }
    rto_ = std::clamp(srtt_ + 4 * rttvar_, min_rto_, max_rto_);
    // Path minimum: the smallest sample, re-learnt every kMinRttWindow
    // samples so a path that became slower is noticed.
    if (rtt_ns < min_rtt_ || ++since_min_ >= kMinRttWindow) {
      min_rtt_ = rtt_ns;
      since_min_ = 0;
    }
  }
  void backoff() noexcept { rto_ = std::min(rto_ * 2, max_rto_); }

  uint64_t rto() const noexcept { return rto_; }
  uint64_t srtt() const noexcept { return srtt_; }
  uint64_t min_rtt() const noexcept { return min_rtt_ == UINT64_MAX ? srtt_ : min_rtt_; }

 private:
  static constexpr uint32_t kMinRttWindow = 4096;
  uint64_t srtt_ = 0, rttvar_ = 0, rto_;
  uint64_t min_rtt_ = UINT64_MAX;
  uint32_t since_min_ = 0;
  const uint64_t min_rto_, max_rto_;
};

class CongestionControl {
 public:
  // Multiplicative decrease on a selective-ack loss (CUBIC's 0.7 rather than
  // Reno's 0.5: random loss on a fast link should not collapse the window).
  static constexpr double kBeta = 0.7;
  // Estimated datagrams queued on the path below which a loss is random; and
  // the RTT rise that counts as no queue at all (on a host with fewer cores
  // than threads, scheduling alone moves RTT samples by a few hundred us;
  // a real bottleneck such as tc tbf with latency 20ms queues far longer).
  static constexpr double kRandomLossBacklog = 3.0;
  static constexpr uint64_t kQueueNoiseNs = 300'000;
  CongestionControl(double initial, double min_cwnd, double max_cwnd)
      : cwnd_(std::clamp(initial, min_cwnd, max_cwnd)), ssthresh_(max_cwnd),
        min_(min_cwnd), max_(max_cwnd) {}

  // `n` datagrams newly acknowledged.
  void on_ack(uint32_t n) noexcept {
    for (uint32_t i = 0; i < n; ++i)
      cwnd_ += cwnd_ < ssthresh_ ? 1.0 : 1.0 / cwnd_;
    cwnd_ = std::min(cwnd_, max_);
  }
  // Loss detected by selective acks for a datagram sent at seq; `snd_max` is
  // the next new sequence number.  Reacts once per epoch.
  bool on_loss(uint32_t seq, uint32_t snd_max, uint64_t srtt, uint64_t min_rtt) noexcept {
    if (in_recovery_ && static_cast<int32_t>(seq - recovery_end_) < 0) return false;
    const uint64_t queued_ns = srtt > min_rtt ? srtt - min_rtt : 0;
    const double backlog = srtt ? cwnd_ * static_cast<double>(queued_ns) / static_cast<double>(srtt) : 0.0;
    if (srtt && (backlog < kRandomLossBacklog || queued_ns < kQueueNoiseNs)) {
      ssthresh_ = std::max(cwnd_, min_);  // random loss: keep the window
      ++random_losses_;
    } else {
      ssthresh_ = std::max(cwnd_ * kBeta, min_);
      cwnd_ = ssthresh_;
      ++reductions_;
    }
    in_recovery_ = true;
    recovery_end_ = snd_max;
    return true;
  }
  void on_timeout(uint32_t snd_max) noexcept {
    undo_cwnd_ = cwnd_;
    undo_ssthresh_ = ssthresh_;
    ssthresh_ = std::max(cwnd_ / 2, min_);
    cwnd_ = min_;
    in_recovery_ = true;
    recovery_end_ = snd_max;
    ++reductions_;
  }
  // The timeout was spurious (an original transmission from before it was
  // acknowledged: the path was only slow, e.g. a scheduling stall longer
  // than the RTO): the window goes back to where it was (Eifel, RFC 3522).
  void undo_timeout() noexcept {
    if (undo_cwnd_ <= 0) return;
    cwnd_ = std::max(cwnd_, undo_cwnd_);
    ssthresh_ = std::max(ssthresh_, undo_ssthresh_);
    undo_cwnd_ = 0;
    ++undone_timeouts_;
  }
  void forget_undo() noexcept { undo_cwnd_ = 0; }
  uint64_t undone_timeouts() const noexcept { return undone_timeouts_; }
  void on_una(uint32_t una) noexcept {
    if (in_recovery_ && static_cast<int32_t>(una - recovery_end_) >= 0) in_recovery_ = false;
  }

  uint32_t window() const noexcept { return static_cast<uint32_t>(cwnd_); }
  double cwnd() const noexcept { return cwnd_; }
  double ssthresh() const noexcept { return ssthresh_; }
  uint64_t reductions() const noexcept { return reductions_; }
  uint64_t random_losses() const noexcept { return random_losses_; }

 private:
  double cwnd_, ssthresh_;
  const double min_, max_;
  bool in_recovery_ = false;
  uint32_t recovery_end_ = 0;
  uint64_t reductions_ = 0;
  uint64_t random_losses_ = 0;
  double undo_cwnd_ = 0, undo_ssthresh_ = 0;  // before the last timeout (0: none)
  uint64_t undone_timeouts_ = 0;
};

}  // namespace tsu::transport::udp
