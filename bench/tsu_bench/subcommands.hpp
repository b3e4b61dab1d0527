// Options and entry points of the tsu-bench subcommands (parsed in main.cpp).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "../common/options.hpp"

namespace bench {

struct RmaOptions {
  CommonOptions common;
  std::vector<std::string> ops{"get", "put", "fadd"};
  std::vector<int> threads{1, 2, 4};
  std::vector<std::size_t> sizes{8};
  int window = 64;            // outstanding requests per thread for the rate
  int overhead_window = 256;  // outstanding requests per thread for the overhead
  bool quiet_rate = false;    // also the rate with no callbacks + tsu_quiet per window
  bool nbi_rate = false;      // also the rate of tsu_try_*_nbi + tsu_quiet per window
};

struct BwOptions {
  CommonOptions common;
  std::vector<std::string> ops{"put", "get"};
  std::vector<int> threads{1};
  std::vector<std::size_t> sizes;  // default set in main (8 B .. 64 MiB)
  int window = 16;
};

struct LimitsOptions {
  CommonOptions common;
  std::vector<std::size_t> sizes;  // memcpy sizes; default as for bw
};

struct CopyOptions {
  CommonOptions common;
  std::vector<std::string> cases{"remote-to-remote", "remote-to-local", "local-to-remote",
                                 "local-to-local"};
  std::vector<int> threads{1};
  std::vector<std::size_t> sizes;  // default set in main (4 B .. 4 MiB)
};

// chain (chain.cpp): ordered third-party copies vs the issuer waiting per link.
struct ChainOptions {
  CommonOptions common;
  int links = 4;
  int iters = 2000;
  std::vector<std::size_t> sizes{8, 4096, 65536};
};

// vector (vector.cpp): one vector request vs one request per piece.
struct VectorOptions {
  CommonOptions common;
  std::vector<std::string> ops{"put", "get"};
  std::vector<std::size_t> sizes{8, 64, 512, 4096};
  std::size_t stride = 8192;
  int pieces = 64;
  int iters = 1000;
};

struct AtomicOptions {
  CommonOptions common;
  std::vector<std::string> ops{"fadd", "cas"};
  std::vector<std::string> interference{"none", "put", "get", "atomic"};
  std::vector<std::string> targets{"own", "peer"};
  std::vector<int> threads{1};
  int window = 64;  // outstanding requests per thread (rate, and the interfering stream)
};

// pingpong, stream, am, coll, ring (msg.cpp): the runtime's TSU_* settings pick the
// protocols; these only shape the runs.
struct MsgOptions {
  bool prepost = false;         // pingpong: post the next receive before sending
  bool yield = false;           // TSU_YIELD=1: ranks sharing a CPU
  std::size_t min = 1, max = 1u << 20;
  int threads = 1;              // am: sender threads (1, 2, .., T); ring: producers
  std::vector<int> cpus;        // rank r runs on cpus[r % size]
  int iters = 0;                // 0: by size
  int window = 64;              // stream: receives posted per round
};

// ult (ult.cpp): user-level threads beside Boost.Fiber and pthreads.
struct UltOptions {
  int reps = 7;
  long iters = 200000;  // operations per repetition (local rows)
  int workers = 1;      // workers per rank
  bool quick = false;
  bool remote_only = false;  // skip the local rows (rank 0 goes straight to the remote ones)
};

struct SummaryOptions {
  std::string input;  // JSON lines written by the other subcommands
};

// Each returns the process exit status.
int run_rma(const RmaOptions& opts);
int run_bw(const BwOptions& opts);
int run_limits(const LimitsOptions& opts);
int run_summary(const SummaryOptions& opts);
int run_copy(const CopyOptions& opts);
int run_chain(const ChainOptions& opts);
int run_vector(const VectorOptions& opts);
int run_atomic(const AtomicOptions& opts);
int run_pingpong(const MsgOptions& opts);
int run_stream(const MsgOptions& opts);
int run_am(const MsgOptions& opts);
int run_coll(const MsgOptions& opts);
int run_ring(const MsgOptions& opts);
int run_ult(const UltOptions& opts);
bool valid_copy_case(const std::string& name);

}  // namespace bench
