#include "api/nic_probe.hpp"

#include <atomic>

#include "util/backoff.hpp"

namespace tsu::api {

namespace {
struct ProbeResult {
  std::atomic<bool> done{false};
  tsu_status_t status = TSU_OK;  // written before `done` (release)
};

void on_probe(tsu_status_t status, void* arg) {
  auto* r = static_cast<ProbeResult*>(arg);
  r->status = status;
  r->done.store(true, std::memory_order_release);
}
}  // namespace

tsu_status_t first_nic_atomic(runtime::Runtime& rt, tsu_seg_t seg) noexcept {
  ProbeResult result;
  const uint64_t zero = 0;
  uint64_t old = 0;
  const tsu_gaddr_t word = tsu_gaddr(rt.rank(), seg, 0);
  util::Backoff backoff;
  tsu_status_t st;
  while ((st = tsu_try_atomic(word, TSU_AOP_FETCH_ADD, TSU_TYPE_UINT64, &zero, nullptr, &old,
                              tsu_cb(&on_probe, &result))) == TSU_EAGAIN)
    if (!rt.engine().progress()) backoff.pause();
  if (st != TSU_OK) return st;
  while (!result.done.load(std::memory_order_acquire))
    if (!rt.engine().progress()) backoff.pause();
  if (result.status == TSU_ERR_UNSUPPORTED) {
    TSU_LOG_WARN("segment %u: the network transport refused its first NIC atomic; its atomics "
                 "run on this rank's CPU (tsu_segment_atomic_site says TSU_ATOMIC_SITE_CPU)",
                 seg);
    rt.make_cpu_atomics(seg);
    return TSU_OK;
  }
  return result.status;
}

}  // namespace tsu::api
