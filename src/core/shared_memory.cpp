#include "core/shared_memory.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace tsu::core {

std::size_t page_round_up(std::size_t size) {
  static const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  return (size + page - 1) / page * page;
}

namespace {
// Faults the mapping's pages in now (allocating them, for the region's
// owner).  A kernel without MADV_POPULATE_WRITE (before 5.14) leaves them
// to first touch, as before: only slower, so the error is ignored.
void populate_now(void* base, std::size_t bytes, Populate populate) {
  if (populate == Populate::kNow) (void)madvise(base, bytes, MADV_POPULATE_WRITE);
}
}  // namespace

tsu_status_t shared_region_create(const char* name, std::size_t size, SharedRegion& out,
                                  std::string& error, Populate populate) {
  const std::size_t bytes = page_round_up(size ? size : 1);
  const int fd = memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) {
    const int saved = errno;
    error = std::string("memfd_create: ") + std::strerror(saved);
    if (saved == EMFILE || saved == ENFILE) {
      // Every shared segment holds one descriptor for as long as it lives.
      error += saved == EMFILE ? " (each shared segment holds a descriptor: raise RLIMIT_NOFILE, "
                                 "e.g. ulimit -n, or free segments)"
                               : " (the system-wide file table is full)";
      return TSU_ERR_LIMIT;
    }
    return TSU_ERR_SYSTEM;
  }
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    error = "ftruncate(" + std::to_string(bytes) + "): " + std::strerror(errno);
    close(fd);
    return TSU_ERR_NO_MEMORY;
  }
  void* base = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    error = "mmap(" + std::to_string(bytes) + "): " + std::strerror(errno);
    close(fd);
    return TSU_ERR_NO_MEMORY;
  }
  populate_now(base, bytes, populate);
  out.base = base;
  out.size = bytes;
  out.fd = fd;
  return TSU_OK;
}

tsu_status_t shared_region_map_peer(pid_t pid, int fd, std::size_t size, void*& base,
                                    std::string& error, Populate populate) {
  const std::string path = "/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd);
  const int local = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (local < 0) {
    const int saved = errno;
    error = "open(" + path + "): " + std::strerror(saved);
    if (saved == EMFILE || saved == ENFILE) {
      error += " (mapping a peer's segment needs a descriptor for a moment: raise RLIMIT_NOFILE)";
      return TSU_ERR_LIMIT;
    }
    return TSU_ERR_SYSTEM;
  }
  void* p = mmap(nullptr, page_round_up(size), PROT_READ | PROT_WRITE, MAP_SHARED, local, 0);
  const int saved = errno;
  close(local);  // the mapping keeps the memory alive
  if (p == MAP_FAILED) {
    error = "mmap of " + path + ": " + std::strerror(saved);
    return TSU_ERR_NO_MEMORY;
  }
  populate_now(p, page_round_up(size), populate);
  base = p;
  return TSU_OK;
}

void shared_region_unmap(void* base, std::size_t size) {
  if (base) munmap(base, page_round_up(size));
}

void shared_region_destroy(SharedRegion& region) {
  shared_region_unmap(region.base, region.size);
  if (region.fd >= 0) close(region.fd);
  region = SharedRegion{};
}

}  // namespace tsu::core
