// A hierarchical collective in flight (hierarchy.cpp): what a team spread
// over nodes runs instead of the flat algorithms.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "coll/coll_layer.hpp"
#include "tsunagi/tsunagi.h"

namespace tsu::coll {

enum class HierKind : uint8_t { kBarrier, kBroadcast, kReduce, kAllreduce, kGather, kAllgather, kAlltoall };

struct HierOp {
  CollLayer* layer = nullptr;
  tsu_team_t team = 0;
  HierKind kind = HierKind::kBarrier;
  const std::byte* src = nullptr;
  std::byte* dst = nullptr;  // broadcast: the buffer
  std::size_t count = 0, bytes = 0;
  tsu_dtype_t type = TSU_DT_UINT8;
  tsu_op_t rop = TSU_OP_SUM;
  uint32_t root = 0;
  tsu_cb_t cb{};
  tsu_status_t status = TSU_OK;
  // The node leader's status after the leaders' phase, broadcast to its node
  // before the last phase (step 2): a failure among the leaders reaches every
  // member of the node, and all of them skip the data phase together.
  int32_t node_status = TSU_OK;
  int step = 0;
  std::vector<std::byte> tmp;  // a node's partial result where the rank has no dst
  // Gathers and alltoall: what the leaders exchange (packed / received,
  // blocks padded to the largest node), and a leader's result for its node.
  std::vector<std::byte> out, in, res;
};

inline HierOp hier_op(CollLayer* layer, tsu_team_t team, HierKind kind, const tsu_cb_t& cb) {
  HierOp h;
  h.layer = layer;
  h.team = team;
  h.kind = kind;
  h.cb = cb;
  return h;
}

}  // namespace tsu::coll
