// Command-line settings of one tsurun invocation (parsed in main.cpp).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace tsurun {

struct Options {
  uint32_t nranks = 0;
  double timeout_s = 0;         // 0: no timeout
  uint32_t ranks_per_node = 0;  // 0: do not set TSU_NODE_ID
  bool tag_output = false;
  bool verbose = false;
  std::vector<std::string> command;  // program and its arguments
  // Multi-host launch
  std::vector<std::string> hosts;    // --hosts a,b,c
  std::string spawn;                 // --spawn 'ssh {host}' / 'ip netns exec {host}'
  bool round_robin = false;          // --placement round-robin (default block)
  std::string bootstrap_addr;        // --bootstrap-addr IP[:PORT] (TCP service)
  bool tolerate_rank_loss = false;   // --tolerate-rank-loss
};

}  // namespace tsurun
