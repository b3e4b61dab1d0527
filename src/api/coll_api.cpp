// Collectives and teams: tsu_team_*, tsu_try_barrier ... tsu_try_alltoall.
#include "api/api_common.hpp"
#include "api/layers.hpp"

using namespace tsu;
using namespace tsu::api;

#define TSU_COLL_ENTRY(fn)                      \
  Runtime* rt = live_runtime();                      \
  if (!rt) [[unlikely]] return not_initialized(fn); \
  coll::CollLayer& c = layers(*rt).coll

extern "C" {

tsu_status_t tsu_team_split(tsu_team_t parent, int32_t color, uint32_t key, tsu_team_t* out) {
  TSU_COLL_ENTRY("tsu_team_split");
  if (!out) return core::fail(TSU_ERR_NULL_POINTER, "tsu_team_split: out is NULL");
  if (runtime::in_progress_context())
    return core::fail(TSU_ERR_UNSUPPORTED,
                      "tsu_team_split: blocking collective; not from a handler or callback");
  return c.split(parent, color, key, *out);
}

tsu_status_t tsu_team_free(tsu_team_t team) {
  TSU_COLL_ENTRY("tsu_team_free");
  return c.free_team(team);
}

tsu_status_t tsu_team_rank(tsu_team_t team, uint32_t* rank) {
  TSU_COLL_ENTRY("tsu_team_rank");
  if (!rank) return core::fail(TSU_ERR_NULL_POINTER, "tsu_team_rank: rank is NULL");
  return c.team_info(team, rank, nullptr);
}

tsu_status_t tsu_team_size(tsu_team_t team, uint32_t* size) {
  TSU_COLL_ENTRY("tsu_team_size");
  if (!size) return core::fail(TSU_ERR_NULL_POINTER, "tsu_team_size: size is NULL");
  return c.team_info(team, nullptr, size);
}

tsu_status_t tsu_team_job_rank(tsu_team_t team, uint32_t team_rank, uint32_t* rank) {
  TSU_COLL_ENTRY("tsu_team_job_rank");
  if (!rank) return core::fail(TSU_ERR_NULL_POINTER, "tsu_team_job_rank: rank is NULL");
  return c.team_job_rank(team, team_rank, *rank);
}

tsu_status_t tsu_try_barrier(tsu_team_t team, tsu_cb_t cb) {
  TSU_COLL_ENTRY("tsu_try_barrier");
  return c.barrier(team, cb);
}

tsu_status_t tsu_try_broadcast(tsu_team_t team, void* buf, size_t bytes, uint32_t root, tsu_cb_t cb) {
  TSU_COLL_ENTRY("tsu_try_broadcast");
  return c.broadcast(team, buf, bytes, root, cb);
}

tsu_status_t tsu_try_reduce(tsu_team_t team, const void* src, void* dst, size_t count,
                            tsu_dtype_t type, tsu_op_t op, uint32_t root, tsu_cb_t cb) {
  TSU_COLL_ENTRY("tsu_try_reduce");
  return c.reduce("tsu_try_reduce", team, src, dst, count, type, op, root, cb);
}

tsu_status_t tsu_try_allreduce(tsu_team_t team, const void* src, void* dst, size_t count,
                               tsu_dtype_t type, tsu_op_t op, tsu_cb_t cb) {
  TSU_COLL_ENTRY("tsu_try_allreduce");
  return c.reduce("tsu_try_allreduce", team, src, dst, count, type, op, -1, cb);
}

tsu_status_t tsu_try_gather(tsu_team_t team, const void* src, void* dst, size_t bytes,
                            uint32_t root, tsu_cb_t cb) {
  TSU_COLL_ENTRY("tsu_try_gather");
  return c.gather("tsu_try_gather", team, src, dst, bytes, root, cb);
}

tsu_status_t tsu_try_allgather(tsu_team_t team, const void* src, void* dst, size_t bytes,
                               tsu_cb_t cb) {
  TSU_COLL_ENTRY("tsu_try_allgather");
  return c.gather("tsu_try_allgather", team, src, dst, bytes, -1, cb);
}

tsu_status_t tsu_try_alltoall(tsu_team_t team, const void* src, void* dst, size_t bytes,
                              tsu_cb_t cb) {
  TSU_COLL_ENTRY("tsu_try_alltoall");
  return c.alltoall(team, src, dst, bytes, cb);
}

}  // extern "C"
