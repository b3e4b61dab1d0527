#include "transport/ofi/fabric_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace tsu::transport::ofi {

namespace {

struct Loaded {
  FabricLibrary lib{};
  bool ok = false;
  std::string error;
};

template <class Fn>
bool resolve(void* handle, const char* name, Fn& out, std::string& error) {
  out = reinterpret_cast<Fn>(dlsym(handle, name));
  if (!out) error = std::string("libfabric.so.1 lacks ") + name;
  return out != nullptr;
}

Loaded load() {
  Loaded l;
  // Keep infinipath's crash handler out of the program (see the header).
  setenv("IPATH_NO_BACKTRACE", "1", 0);
  // ofi_rxd (libfabric 1.17) sends up to this many packets to a peer
  // unacknowledged (default 128).  At 128, a peer streaming 64 KiB messages
  // both ways outruns the receive buffers rxd keeps posted with its udp
  // provider ("failed to repost", "could not find posted rx to release" at
  // FI_LOG_LEVEL=warn); rxd's bookkeeping then loses track of segments and
  // completes receives short (FI_ETRUNC) or never.  32 kept it clean in the
  // stress runs of docs/ofi.md.  Only read by rxd, when the provider list is
  // first made; a value set by the user stays.
  setenv("FI_OFI_RXD_MAX_UNACKED", "32", 0);
  void* h = dlopen("libfabric.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    l.error = std::string("cannot load libfabric.so.1 (install libfabric1): ") +
              (why ? why : "unknown reason");
    return l;
  }
  FabricLibrary& f = l.lib;
  l.ok = resolve(h, "fi_getinfo", f.getinfo, l.error) &&
         resolve(h, "fi_freeinfo", f.freeinfo, l.error) &&
         resolve(h, "fi_dupinfo", f.dupinfo, l.error) &&
         resolve(h, "fi_fabric", f.fabric, l.error) &&
         resolve(h, "fi_strerror", f.strerror, l.error) &&
         resolve(h, "fi_version", f.version, l.error);
  // The handle stays open for the process: providers keep threads and
  // handlers that must not be unmapped.
  return l;
}

}  // namespace

const FabricLibrary* fabric_library(std::string& error) {
  static const Loaded loaded = load();  // thread-safe, once
  if (!loaded.ok) {
    error = loaded.error;
    return nullptr;
  }
  return &loaded.lib;
}

}  // namespace tsu::transport::ofi
