// libfabric, loaded on first use (dlopen) rather than at program start.
//
// Why: Debian's libfabric links the psm providers' libraries (libpsm2,
// libinfinipath), whose constructors install SIGSEGV/SIGBUS handlers in every
// process that loads them.  Linked into libtsunagi, that would change every
// tsunagi program's crash behaviour, ofi or not.  Loaded here, only a job
// that picks TSU_NET=ofi (or tsu-info's provider report) loads it, and with
// IPATH_NO_BACKTRACE set (unless the user set it) so that infinipath keeps
// its handler out.  A machine without libfabric still runs tsunagi: TSU_NET=ofi
// then fails at tsu_init with the reason.
//
// Only the few functions libfabric exports are resolved here; everything
// else in its API is inline calls through the objects' operation tables.
#pragma once

#include <rdma/fabric.h>

#include <cstdint>
#include <string>

namespace tsu::transport::ofi {

struct FabricLibrary {
  int (*getinfo)(uint32_t version, const char* node, const char* service, uint64_t flags,
                 const fi_info* hints, fi_info** info);
  void (*freeinfo)(fi_info* info);
  fi_info* (*dupinfo)(const fi_info* info);
  int (*fabric)(fi_fabric_attr* attr, fid_fabric** fabric, void* context);
  const char* (*strerror)(int errnum);
  uint32_t (*version)();

  fi_info* allocinfo() const { return dupinfo(nullptr); }
};

// The loaded library, or nullptr with the reason in `error`.  Thread-safe;
// loads once.
const FabricLibrary* fabric_library(std::string& error);

}  // namespace tsu::transport::ofi
