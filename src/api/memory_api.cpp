// Segments and address helpers.
#include "api/api_common.hpp"
#include "api/nic_probe.hpp"

using namespace tsu;
using tsu::api::live_runtime;

extern "C" {

tsu_status_t tsu_segment_alloc(size_t size, tsu_seg_t* seg, void** base) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_segment_alloc");
  if (!seg || !base)
    return core::fail(TSU_ERR_NULL_POINTER, "tsu_segment_alloc: seg and base must not be NULL");
  if (size == 0) return core::fail(TSU_ERR_INVALID_ARG, "tsu_segment_alloc: size is 0");
  std::string error;
  tsu_seg_t id;
  void* b;
  const tsu_status_t st = rt->allocate_segment(size, id, b, error);
  if (st != TSU_OK) return core::fail(st, "tsu_segment_alloc(%zu): %s", size, error.c_str());
  *seg = id;
  *base = b;
  return TSU_OK;
}

tsu_status_t tsu_segment_alloc_ex(size_t size, unsigned flags, tsu_seg_t* seg, void** base) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_segment_alloc_ex");
  if (!seg || !base)
    return core::fail(TSU_ERR_NULL_POINTER, "tsu_segment_alloc_ex: seg and base must not be NULL");
  if (flags & ~TSU_SEG_NIC_ATOMICS)
    return core::fail(TSU_ERR_INVALID_ARG, "tsu_segment_alloc_ex: unknown flags 0x%x",
                      flags & ~TSU_SEG_NIC_ATOMICS);
  const bool nic = flags & TSU_SEG_NIC_ATOMICS;
  // The allocation waits for its first NIC atomic: only where waiting is allowed.
  if (nic && runtime::in_progress_context())
    return core::fail(TSU_ERR_UNSUPPORTED,
                      "tsu_segment_alloc_ex: TSU_SEG_NIC_ATOMICS cannot wait for the segment's "
                      "first NIC atomic inside a completion callback or the progress thread");
  if (size == 0 || (nic && size < 8))
    return core::fail(TSU_ERR_INVALID_ARG, "tsu_segment_alloc_ex: size %zu is below %d", size,
                      nic ? 8 : 1);
  std::string error;
  tsu_seg_t id;
  void* b;
  tsu_status_t st = rt->allocate_segment(size, id, b, error, nic);
  if (st != TSU_OK) return core::fail(st, "tsu_segment_alloc_ex(%zu): %s", size, error.c_str());
  if (nic) {
    st = api::first_nic_atomic(*rt, id);
    if (st != TSU_OK) {
      std::string ignored;
      rt->free_segment(id, ignored);
      return core::fail(TSU_ERR_SYSTEM,
                        "tsu_segment_alloc_ex: the first NIC atomic on the new segment failed: %s",
                        tsu_strerror(st));
    }
  }
  *seg = id;
  *base = b;
  return TSU_OK;
}

tsu_status_t tsu_segment_atomic_site(tsu_seg_t seg, tsu_atomic_site_t* site) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_segment_atomic_site");
  if (!site) return core::fail(TSU_ERR_NULL_POINTER, "tsu_segment_atomic_site: site is NULL");
  transport::AtomicSite s;
  if (!rt->atomic_site(seg, s))
    return core::fail(TSU_ERR_BAD_SEGMENT, "tsu_segment_atomic_site: segment %u does not exist",
                      seg);
  *site = s == transport::AtomicSite::kNic ? TSU_ATOMIC_SITE_NIC : TSU_ATOMIC_SITE_CPU;
  return TSU_OK;
}

tsu_status_t tsu_mem_register(void* base, size_t size, tsu_seg_t* seg) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_mem_register");
  if (!base || !seg)
    return core::fail(TSU_ERR_NULL_POINTER, "tsu_mem_register: base and seg must not be NULL");
  if (size == 0) return core::fail(TSU_ERR_INVALID_ARG, "tsu_mem_register: size is 0");
  if (reinterpret_cast<uintptr_t>(base) + size < reinterpret_cast<uintptr_t>(base))
    return core::fail(TSU_ERR_INVALID_ARG, "tsu_mem_register: range wraps around");
  std::string error;
  tsu_seg_t id;
  const tsu_status_t st = rt->register_segment(base, size, id, error);
  if (st != TSU_OK) return core::fail(st, "tsu_mem_register: %s", error.c_str());
  *seg = id;
  return TSU_OK;
}

tsu_status_t tsu_segment_free(tsu_seg_t seg) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_segment_free");
  std::string error;
  const tsu_status_t st = rt->free_segment(seg, error);
  if (st != TSU_OK) return core::fail(st, "tsu_segment_free: %s", error.c_str());
  return TSU_OK;
}

tsu_status_t tsu_segment_info(tsu_seg_t seg, void** base, size_t* size) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_segment_info");
  if (!base || !size)
    return core::fail(TSU_ERR_NULL_POINTER, "tsu_segment_info: base and size must not be NULL");
  void* b;
  std::size_t s;
  if (!rt->segments().info(seg, b, s))
    return core::fail(TSU_ERR_BAD_SEGMENT, "tsu_segment_info: segment %u does not exist", seg);
  *base = b;
  *size = s;
  return TSU_OK;
}

tsu_status_t tsu_laddr_of(const void* ptr, tsu_laddr_t* out) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_laddr_of");
  if (!ptr || !out)
    return core::fail(TSU_ERR_NULL_POINTER, "tsu_laddr_of: ptr and out must not be NULL");
  tsu_seg_t seg;
  uint64_t off;
  if (!rt->segments().find(ptr, seg, off))
    return core::fail(TSU_ERR_BAD_SEGMENT, "tsu_laddr_of: %p is in no segment of this rank", ptr);
  *out = tsu_laddr(seg, off);
  return TSU_OK;
}

tsu_status_t tsu_gaddr_of(const void* ptr, tsu_gaddr_t* out) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_gaddr_of");
  if (!ptr || !out)
    return core::fail(TSU_ERR_NULL_POINTER, "tsu_gaddr_of: ptr and out must not be NULL");
  tsu_seg_t seg;
  uint64_t off;
  if (!rt->segments().find(ptr, seg, off))
    return core::fail(TSU_ERR_BAD_SEGMENT, "tsu_gaddr_of: %p is in no segment of this rank", ptr);
  *out = tsu_gaddr(rt->rank(), seg, off);
  return TSU_OK;
}

tsu_status_t tsu_laddr_ptr(tsu_laddr_t addr, size_t len, void** out) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_laddr_ptr");
  if (!out) return core::fail(TSU_ERR_NULL_POINTER, "tsu_laddr_ptr: out is NULL");
  std::byte* p;
  const tsu_status_t st = rt->segments().translate(addr.seg, addr.offset, len, p);
  if (st != TSU_OK)
    return core::fail(st, "tsu_laddr_ptr: segment %u offset %llu length %zu: %s", addr.seg,
                      static_cast<unsigned long long>(addr.offset), len, tsu_strerror(st));
  *out = p;
  return TSU_OK;
}

tsu_status_t tsu_gaddr_ptr(tsu_gaddr_t addr, size_t len, void** out) {
  runtime::Runtime* rt = live_runtime();
  if (!rt) return api::not_initialized("tsu_gaddr_ptr");
  if (!out) return core::fail(TSU_ERR_NULL_POINTER, "tsu_gaddr_ptr: out is NULL");
  if (addr.rank >= rt->size())
    return core::fail(TSU_ERR_BAD_RANK, "tsu_gaddr_ptr: rank %u >= job size %u", addr.rank,
                      rt->size());
  if (!api::memory_route(*rt, addr.rank))
    return core::fail(TSU_ERR_UNREACHABLE, "tsu_gaddr_ptr: rank %u is on another node",
                      addr.rank);
  transport::Access a;
  const tsu_status_t st = rt->memory_access(addr.rank)->resolve(addr, len, a);
  if (st != TSU_OK)
    return core::fail(st, "tsu_gaddr_ptr: rank %u segment %u offset %llu length %zu: %s",
                      addr.rank, addr.seg, static_cast<unsigned long long>(addr.offset), len,
                      tsu_strerror(st));
  if (a.kind != transport::Access::kDirect)
    return core::fail(TSU_ERR_UNREACHABLE,
                      "tsu_gaddr_ptr: segment %u of rank %u is registered memory of another "
                      "process, reachable only by RMA",
                      addr.seg, addr.rank);
  *out = a.ptr;
  return TSU_OK;
}

}  // extern "C"
