// Seeded impairment stage at the socket boundary: a documented TEST FACILITY
// that makes the outgoing datagram stream lossy, reordered, duplicated,
// corrupted and delayed, reproducibly (seeded).  Off unless TSU_UDP_IMPAIR is
// set; when off the transport holds a null pointer and pays one branch.
//
// Spec: comma-separated key=value, e.g. "loss=10,reorder=25,dup=5,corrupt=1,
// delay=2ms,jitter=1ms,seed=7".  Percentages are 0..100 (fractions allowed);
// times take ns/us/ms/s suffixes.  `reorder` holds that share of datagrams
// back by an extra delay (3x delay, at least 200 us), so later ones overtake.
#pragma once

#include <netinet/in.h>

#include <cstddef>
#include <cstdint>
#include <queue>
#include <random>
#include <string>
#include <vector>

namespace tsu::transport::udp {

struct ImpairConfig {
  double loss = 0, reorder = 0, dup = 0, corrupt = 0;  // percent
  uint64_t delay_ns = 0, jitter_ns = 0;
  uint64_t seed = 1;
};

// Parses the spec; false with `error` set when malformed.
bool parse_impair_spec(const std::string& spec, ImpairConfig& out, std::string& error);

class ImpairStage {
 public:
  explicit ImpairStage(const ImpairConfig& cfg) : cfg_(cfg), rng_(cfg.seed) {}

  struct Out {  // a datagram to transmit now
    const std::byte* data;
    std::size_t len;
    sockaddr_in to;
  };
  // Takes one outgoing datagram; appends what must be sent now to `now_out`
  // (pointers valid until the next call of either method).
  void submit(const std::byte* data, std::size_t len, const sockaddr_in& to, uint64_t now,
              std::vector<Out>& now_out);
  // Appends held datagrams whose time has come.
  void release(uint64_t now, std::vector<Out>& now_out);
  // Ns until the next held datagram is due (UINT64_MAX: none).
  uint64_t next_due(uint64_t now) const noexcept;
  void clear_sent() { sent_.clear(); }

  uint64_t dropped = 0, duplicated = 0, corrupted = 0, delayed = 0, reordered = 0;

 private:
  struct Held {
    uint64_t due;
    uint64_t order;
    std::vector<std::byte> bytes;
    sockaddr_in to;
    bool operator>(const Held& o) const { return due != o.due ? due > o.due : order > o.order; }
  };
  bool chance(double percent) { return percent > 0 && uni_(rng_) * 100.0 < percent; }
  void emit(const std::byte* data, std::size_t len, const sockaddr_in& to, uint64_t now,
            std::vector<Out>& now_out);

  ImpairConfig cfg_;
  std::mt19937_64 rng_;
  std::uniform_real_distribution<double> uni_{0.0, 1.0};
  std::priority_queue<Held, std::vector<Held>, std::greater<>> held_;
  std::vector<std::vector<std::byte>> sent_;  // storage of released/corrupted copies
  uint64_t order_ = 0;
};

}  // namespace tsu::transport::udp
