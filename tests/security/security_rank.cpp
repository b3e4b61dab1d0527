// Rank program of the security tests (tests/security/CMakeLists.txt).
//
//   security_rank DIR
//
// Every rank initialises, writes DIR/ready.<rank> ("<udp port> <TSU_BOOTSTRAP>"),
// then runs rounds of byte-exact RMA with a rank on another node (put a
// pattern, get it back, compare) until DIR/done exists (the test's attacker
// has finished) and at least 20 rounds ran, and finalizes.  It also scans
// every process's command line and environment (/proc/*/cmdline, environ)
// for the job secret it was given, while all ranks are alive.  Prints
// "rank R: byte-exact after N rounds" and "rank R: secret seen nowhere in
// P processes", or FAIL lines.
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <tsunagi/tsunagi.h>

#include "bootstrap/auth.hpp"

namespace {

uint32_t g_rank = 0;

[[noreturn]] void fail(const std::string& what) {
  std::printf("rank %u: FAIL: %s (%s)\n", g_rank, what.c_str(), tsu_last_error());
  std::fflush(stdout);
  std::exit(1);
}

// The udp port this process bound: the local port of a udp socket among
// our descriptors (/proc/self/fd -> socket:[inode], /proc/net/udp).
unsigned udp_port_of_self() {
  std::vector<std::string> inodes;
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      char link[256] = {};
      const std::string p = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t n = readlink(p.c_str(), link, sizeof link - 1);
      if (n > 0 && std::strncmp(link, "socket:[", 8) == 0) inodes.emplace_back(link + 8, std::strlen(link + 8) - 1);
    }
    closedir(d);
  }
  std::ifstream in("/proc/net/udp");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::istringstream f(line);
    std::string sl, local, remote, st, queues, tr, retr, uid, timeout, inode;
    f >> sl >> local >> remote >> st >> queues >> tr >> retr >> uid >> timeout >> inode;
    for (const auto& i : inodes)
      if (i == inode) return static_cast<unsigned>(std::strtoul(local.substr(local.find(':') + 1).c_str(), nullptr, 16));
  }
  return 0;
}

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// How many processes' cmdline/environ contain the secret (as hex, either
// case, or as raw bytes), or - for processes of this job (TSU_JOBID) - a
// TSU_JOB_SECRET variable at all; `scanned` counts the processes looked at.
int scan_processes(const std::string& hex, const std::string& raw, int& scanned) {
  const char* job = std::getenv("TSU_JOBID");
  const std::string ours = std::string("TSU_JOBID=") + (job ? job : "?");
  std::string upper = hex;
  for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int found = 0;
  scanned = 0;
  DIR* d = opendir("/proc");
  if (!d) return -1;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    ++scanned;
    for (const char* what : {"cmdline", "environ"}) {
      const std::string text = read_all(std::string("/proc/") + e->d_name + "/" + what);
      if (text.find(hex) != std::string::npos || text.find(upper) != std::string::npos ||
          text.find(raw) != std::string::npos ||
          (text.find(ours) != std::string::npos && text.find("TSU_JOB_SECRET=") != std::string::npos)) {
        std::printf("rank %u: FAIL: the job secret is in /proc/%s/%s\n", g_rank, e->d_name, what);
        ++found;
      }
    }
  }
  closedir(d);
  return found;
}

bool exists(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0;
}

// Completion callbacks may run on the progress thread.
struct Done {
  std::atomic<int> n{0};
  std::atomic<tsu_status_t> st{TSU_OK};
};
void on_done(tsu_status_t st, void* arg) {
  auto* d = static_cast<Done*>(arg);
  if (st != TSU_OK) d->st.store(st, std::memory_order_relaxed);
  d->n.fetch_add(1, std::memory_order_release);
}

void wait_for(Done& d, int n) {
  while (d.n.load(std::memory_order_acquire) < n) tsu_progress();
  if (d.st.load(std::memory_order_relaxed) != TSU_OK) fail("an RMA request failed");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: security_rank DIR\n");
    return 2;
  }
  const std::string dir = argv[1];
  // Read the secret first (the library reads the same cached copy): the
  // scan needs to know what to look for.
  std::string err;
  const auto secret = tsu::bootstrap::auth::job_secret(err);
  if (!secret) {
    std::printf("FAIL: no job secret: %s\n", err.c_str());
    return 1;
  }
  if (tsu_init(nullptr) != TSU_OK) fail("tsu_init");
  uint32_t size = 0, nodes = 0;
  tsu_rank(&g_rank);
  tsu_size(&size);
  tsu_node_count(&nodes);
  if (nodes < 2) fail("run on at least two (pseudo-)nodes");
  // A peer on another node: the next rank whose node differs.
  uint32_t my_node = 0, peer = g_rank;
  tsu_node_of(g_rank, &my_node);
  for (uint32_t i = 1; i < size; ++i) {
    uint32_t node = 0;
    tsu_node_of((g_rank + i) % size, &node);
    if (node != my_node) {
      peer = (g_rank + i) % size;
      break;
    }
  }
  if (tsu_barrier() != TSU_OK) fail("barrier");

  // Scan while every rank (and every spawn wrapper) is alive.
  int scanned = 0;
  const std::string raw(reinterpret_cast<const char*>(secret->data()), secret->size());
  const int found = scan_processes(tsu::bootstrap::auth::to_hex(*secret), raw, scanned);
  if (found != 0) fail("the job secret is visible to other processes");
  std::printf("rank %u: secret seen nowhere in %d processes\n", g_rank, scanned);

  {
    const char* boot = std::getenv("TSU_BOOTSTRAP");
    std::ofstream out(dir + "/ready." + std::to_string(g_rank) + ".tmp");
    out << udp_port_of_self() << " " << (boot ? boot : "") << "\n";
    out.close();
    std::rename((dir + "/ready." + std::to_string(g_rank) + ".tmp").c_str(),
                (dir + "/ready." + std::to_string(g_rank)).c_str());
  }

  void* base = nullptr;
  size_t seg = 0;
  if (tsu_segment_info(TSU_SEG_MAIN, &base, &seg) != TSU_OK) fail("segment_info");
  constexpr size_t kLen = 256 * 1024;
  if (seg < 4 * kLen) fail("main segment too small");
  auto* b = static_cast<uint8_t*>(base);
  // [0, kLen): what we send; [kLen, 2kLen): where the peer writes; [2kLen, 3kLen): read back.
  int rounds = 0;
  const auto start = std::chrono::steady_clock::now();
  for (;; ++rounds) {
    for (size_t i = 0; i < kLen; ++i) b[i] = static_cast<uint8_t>((i * 131u + g_rank * 7u + rounds * 13u) & 0xff);
    Done d;
    const size_t sizes[] = {1, 100, 1400, 4096, 65536, kLen};
    int issued = 0;
    for (size_t s : sizes) {
      tsu_status_t st;
      while ((st = tsu_try_put(tsu_gaddr(peer, TSU_SEG_MAIN, kLen), tsu_laddr(TSU_SEG_MAIN, 0), s,
                               tsu_cb_t{on_done, &d})) == TSU_EAGAIN)
        tsu_progress();
      if (st != TSU_OK) fail("tsu_try_put");
      ++issued;
      wait_for(d, issued);  // in order: the last put leaves the whole area written
    }
    while (tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 2 * kLen), tsu_gaddr(peer, TSU_SEG_MAIN, kLen), kLen,
                       tsu_cb_t{on_done, &d}) == TSU_EAGAIN)
      tsu_progress();
    wait_for(d, issued + 1);
    if (std::memcmp(b + 2 * kLen, b, kLen) != 0) fail("round " + std::to_string(rounds) + ": data differs");
    if (rounds >= 20 && exists(dir + "/done")) break;
    if (std::chrono::steady_clock::now() - start > std::chrono::seconds(120)) fail("the attacker never finished");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // Everyone stops together, then finalize prints TSU_STATS.
  if (tsu_barrier() != TSU_OK) fail("barrier");
  std::printf("rank %u: byte-exact after %d rounds\n", g_rank, rounds + 1);
  std::fflush(stdout);
  if (tsu_finalize() != TSU_OK) fail("tsu_finalize");
  return 0;
}
