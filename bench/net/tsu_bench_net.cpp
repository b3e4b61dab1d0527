// tsu-bench-net: tsunagi over the udp transport beside the limit on the same
// link (a raw UDP socket pingpong and throughput test).
//
//   tsurun -n 2 --hosts A,B ... tsu-bench-net tsu [--quick] [--only latency|bandwidth|bigbw|rate|fadd_sites] [--get-rate]
//                                                  [--wait yield|quiet|counter]
//                                                             rank 0 measures, rank 1 serves
//   tsu-bench-net raw-server PORT                             (on B)
//   tsu-bench-net raw-client IP PORT                          (on A)
// Output: one JSON object per line (bench/net/run_netns_bench.sh collects them).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tsunagi/tsunagi.h"
#include "transport/udp/datagram.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double now_us() {
  return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count();
}

struct Flag {
  std::atomic<int> done{0};
  std::atomic<int> status{0};
};
void flag_cb(tsu_status_t st, void* arg) {
  auto* f = static_cast<Flag*>(arg);
  f->status.store(st);
  f->done.fetch_add(1, std::memory_order_release);
}
// In thread mode the progress thread does the work: waiters yield the core
// (this machine has 2); in manual mode they drive progress themselves.
bool g_manual = false;
// --wait quiet: latency waits in tsu_quiet(), which drives progress from the
// waiting thread (polls the socket, as the raw UDP client does) instead of
// yielding to the progress thread.  --wait counter: the callback counts a
// tsu_counter_t and the thread waits in tsu_counter_wait (the C++ futures'
// wait).  --wait yield (default): the thread spins on its own flag with
// sched_yield, as an application that knows nothing of tsunagi's waits.
enum class WaitMode { kYield, kQuiet, kCounter };
WaitMode g_wait = WaitMode::kYield;
bool g_wait_quiet = false;  // g_wait == kQuiet (the other loops' flag)
const char* wait_name() {
  switch (g_wait) {
    case WaitMode::kQuiet: return "quiet";
    case WaitMode::kCounter: return "counter";
    case WaitMode::kYield: break;
  }
  return g_manual ? "progress" : "yield";
}
void idle() {
  if (g_manual) tsu_progress();
  else sched_yield();
}
void wait_flag(Flag& f, int n) {
  while (f.done.load(std::memory_order_acquire) < n) idle();
}

template <typename F>
void issue(F&& f) {
  while (f() == TSU_EAGAIN) idle();
}

// Operations whose callback reported an error (latency): the run then exits 1
// instead of printing the time of failures as a latency.
int g_failed = 0;

void latency(const char* op, uint32_t peer, int iters) {
  std::vector<double> t;
  uint64_t result = 0;
  for (int i = 0; i < iters + 100; ++i) {
    Flag f;
    tsu_counter_t c;
    tsu_counter_init(&c);
    const tsu_cb_t cb = g_wait == WaitMode::kCounter ? tsu_counter_cb(&c) : tsu_cb(flag_cb, &f);
    const double t0 = now_us();
    if (!std::strcmp(op, "get"))
      issue([&] { return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, 0), tsu_gaddr(peer, TSU_SEG_MAIN, 0), 8, cb); });
    else if (!std::strcmp(op, "put"))
      issue([&] { return tsu_try_put(tsu_gaddr(peer, TSU_SEG_MAIN, 64), tsu_laddr(TSU_SEG_MAIN, 0), 8, cb); });
    else
      issue([&] { return tsu_try_fetch_add_u64(tsu_gaddr(peer, TSU_SEG_MAIN, 128), 1, &result, cb); });
    tsu_status_t st = TSU_OK;
    if (g_wait == WaitMode::kCounter) {
      st = tsu_counter_wait(&c, 1);
    } else {
      if (g_wait_quiet) tsu_quiet();
      wait_flag(f, 1);
      st = static_cast<tsu_status_t>(f.status.load());
    }
    if (st != TSU_OK) {
      if (g_failed++ == 0) std::fprintf(stderr, "latency: %s failed: %s\n", op, tsu_strerror(st));
      return;
    }
    if (i >= 100) t.push_back(now_us() - t0);
  }
  std::sort(t.begin(), t.end());
  double sum = 0;
  for (double x : t) sum += x;
  std::printf("{\"bench\":\"tsu_latency\",\"op\":\"%s\",\"wait\":\"%s\",\"bytes\":8,\"median_us\":%.2f,\"mean_us\":%.2f,\"p99_us\":%.2f}\n",
              op, wait_name(), t[t.size() / 2], sum / static_cast<double>(t.size()), t[t.size() * 99 / 100]);
  std::fflush(stdout);
}

// --only fadd_sites: 8-byte fetch-add latency to `peer`'s word in a segment
// with CPU atomics (tsu_segment_alloc: the target's CPU executes it) and in
// one with NIC atomics (TSU_SEG_NIC_ATOMICS: the provider's atomic), in
// alternating blocks of 100 so both see the same machine state.  Every rank
// allocates both; rank 0 learns `peer`'s ids from its main segment.
constexpr uint64_t kSiteIdsOff = 256;  // main segment: this rank's two segment ids

bool alloc_site_segments(tsu_seg_t ids[2]) {
  void* base = nullptr;
  if (tsu_segment_alloc_ex(4096, 0, &ids[0], &base) != TSU_OK ||
      tsu_segment_alloc_ex(4096, TSU_SEG_NIC_ATOMICS, &ids[1], &base) != TSU_OK) {
    std::fprintf(stderr, "tsu-bench-net fadd_sites: %s\n", tsu_last_error());
    return false;
  }
  void* main = nullptr;
  std::size_t len = 0;
  tsu_segment_info(TSU_SEG_MAIN, &main, &len);
  std::memcpy(static_cast<char*>(main) + kSiteIdsOff, ids, 2 * sizeof(tsu_seg_t));
  return true;
}

void fadd_sites(uint32_t peer, int iters) {
  tsu_seg_t ids[2];
  Flag g;
  issue([&] {
    return tsu_try_get(tsu_laddr(TSU_SEG_MAIN, kSiteIdsOff + 64), tsu_gaddr(peer, TSU_SEG_MAIN, kSiteIdsOff),
                       sizeof ids, tsu_cb(flag_cb, &g));
  });
  wait_flag(g, 1);
  void* main = nullptr;
  std::size_t len = 0;
  tsu_segment_info(TSU_SEG_MAIN, &main, &len);
  std::memcpy(ids, static_cast<char*>(main) + kSiteIdsOff + 64, sizeof ids);
  std::vector<double> t[2];
  uint64_t result = 0;
  constexpr int kBlock = 100;
  const int blocks = (iters + kBlock - 1) / kBlock + 1;  // the first block of each: warm-up
  for (int b = 0; b < blocks; ++b)
    for (int k = 0; k < 2; ++k)
      for (int i = 0; i < kBlock; ++i) {
        Flag f;
        const double t0 = now_us();
        issue([&] { return tsu_try_fetch_add_u64(tsu_gaddr(peer, ids[k], 64), 1, &result, tsu_cb(flag_cb, &f)); });
        if (g_wait_quiet) tsu_quiet();
        wait_flag(f, 1);
        if (f.status.load() != TSU_OK) {
          std::fprintf(stderr, "fadd_sites: fetch-add failed: %s\n", tsu_strerror(f.status.load()));
          return;
        }
        if (b > 0) t[k].push_back(now_us() - t0);
      }
  for (int k = 0; k < 2; ++k) {
    std::sort(t[k].begin(), t[k].end());
    double sum = 0;
    for (double x : t[k]) sum += x;
    std::printf("{\"bench\":\"tsu_fadd_site\",\"site\":\"%s\",\"wait\":\"%s\",\"bytes\":8,\"count\":%zu,"
                "\"median_us\":%.2f,\"mean_us\":%.2f,\"p99_us\":%.2f}\n",
                k ? "nic" : "cpu", wait_name(), t[k].size(),
                t[k][t[k].size() / 2], sum / static_cast<double>(t[k].size()), t[k][t[k].size() * 99 / 100]);
  }
  std::fflush(stdout);
}

// The issuing thread waits in tsu_counter_wait (spins briefly, then sleeps)
// rather than in a sched_yield loop: on this 2-core host a yielding waiter
// stays runnable and takes CPU time from the progress threads that move the
// data (in manual mode tsu_counter_wait drives progress itself).
void bandwidth(uint32_t peer, std::size_t size, std::size_t seg) {
  const std::size_t total = std::max<std::size_t>(size * 4, std::min<std::size_t>(size * 4096, 64u << 20));
  const int n = static_cast<int>(std::max<std::size_t>(1, total / size));
  const int window = static_cast<int>(std::max<std::size_t>(1, std::min<std::size_t>(64, (16u << 20) / size)));
  tsu_counter_t done;
  tsu_counter_init(&done);
  const double t0 = now_us();
  for (int i = 0; i < n; ++i) {
    if (i >= window) tsu_counter_wait(&done, static_cast<uint64_t>(i - window + 1));
    const uint64_t off = (static_cast<uint64_t>(i) * size) % (seg - size + 1);
    issue([&] { return tsu_try_put(tsu_gaddr(peer, TSU_SEG_MAIN, off), tsu_laddr(TSU_SEG_MAIN, 0), size, tsu_counter_cb(&done)); });
  }
  tsu_counter_wait(&done, static_cast<uint64_t>(n));
  const double us = now_us() - t0;
  std::printf("{\"bench\":\"tsu_put_bw\",\"bytes\":%zu,\"count\":%d,\"MBps\":%.1f}\n", size, n,
              static_cast<double>(size) * n / us);
  std::fflush(stdout);
}

// 8-byte puts (or gets) by `threads` threads, 64 in flight each, for 1 s.
void rate(uint32_t peer, int threads, bool get) {
  std::atomic<uint64_t> total{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> th;
  for (int t = 0; t < threads; ++t) {
    th.emplace_back([&, t] {
      Flag f;
      uint64_t issued = 0;
      while (!stop.load(std::memory_order_relaxed)) {
        while (issued - static_cast<uint64_t>(f.done.load(std::memory_order_acquire)) >= 64) idle();
        const tsu_gaddr_t remote = tsu_gaddr(peer, TSU_SEG_MAIN, 4096 + 8 * static_cast<uint64_t>(t));
        const tsu_laddr_t local = tsu_laddr(TSU_SEG_MAIN, 8 * static_cast<uint64_t>(t));
        if ((get ? tsu_try_get(local, remote, 8, tsu_cb(flag_cb, &f))
                 : tsu_try_put(remote, local, 8, tsu_cb(flag_cb, &f))) == TSU_OK)
          ++issued;
        else
          idle();
      }
      wait_flag(f, static_cast<int>(issued));
      total += issued;
    });
  }
  const double t0 = now_us();
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  stop = true;
  for (auto& x : th) x.join();
  const double us = now_us() - t0;
  std::printf("{\"bench\":\"tsu_msg_rate\",\"op\":\"%s\",\"threads\":%d,\"Mmsgs\":%.3f}\n", get ? "get" : "put", threads,
              static_cast<double>(total.load()) / us);
  std::fflush(stdout);
}

int run_tsu(bool quick, const std::string& only, bool get_rate) {
  const char* pm = std::getenv("TSU_PROGRESS");
  g_manual = pm && !std::strcmp(pm, "manual");
  if (tsu_init(nullptr) != TSU_OK) {
    std::fprintf(stderr, "tsu_init: %s\n", tsu_last_error());
    return 1;
  }
  uint32_t me, n;
  tsu_rank(&me);
  tsu_size(&n);
  void* base;
  std::size_t seg;
  tsu_segment_info(TSU_SEG_MAIN, &base, &seg);
  if (only == "fadd_sites") {  // its own run: every rank allocates the two segments
    tsu_seg_t ids[2];
    const bool ok = alloc_site_segments(ids);
    tsu_barrier();
    if (me == 0 && ok) fadd_sites(1, quick ? 1000 : 10000);
    tsu_barrier();
    return tsu_finalize() == TSU_OK && ok ? 0 : 1;
  }
  if (me == 0) {
    const int iters = quick ? 500 : 5000;
    const bool all = only.empty();
    if (all || only == "latency")
      for (const char* op : {"get", "put", "fetch_add"}) latency(op, 1, iters);
    if (all || only == "bandwidth")
      for (std::size_t s = 8; s <= (64u << 20) && s <= seg / 2; s *= (quick ? 64 : 8)) bandwidth(1, s, seg);
    if (all || only == "bigbw") bandwidth(1, std::min<std::size_t>(16u << 20, seg / 2), seg);
    if (all || only == "rate")
      for (int t : {1, 2, 4}) rate(1, t, false);
    if (get_rate && (all || only == "rate"))
      for (int t : {1, 2, 4}) rate(1, t, true);
  }
  tsu_barrier();
  return tsu_finalize() == TSU_OK && g_failed == 0 ? 0 : 1;
}

// ---- raw UDP on the same link ------------------------------------------------
constexpr std::size_t kDgram = 1472;

int raw_server(int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  int sz = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &sz, sizeof sz);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return 1;
  // Coalesced receives, so that the offloaded throughput run below is
  // measured with the same kernel help tsunagi uses (plain datagrams still
  // arrive one by one).
  int on = 1;
  setsockopt(fd, SOL_UDP, UDP_GRO, &on, sizeof on);
  std::vector<char> buf(65536);
  uint64_t bytes = 0;
  for (;;) {
    sockaddr_in from{};
    socklen_t fl = sizeof from;
    const ssize_t r = recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &fl);
    if (r <= 0) continue;
    if (buf[0] == 'P') {  // ping: echo
      sendto(fd, buf.data(), static_cast<size_t>(r), 0, reinterpret_cast<sockaddr*>(&from), fl);
    } else if (buf[0] == 'D') {
      bytes += static_cast<uint64_t>(r);
    } else if (buf[0] == 'E') {  // end of a throughput run: report and reset
      char msg[64];
      const int m = std::snprintf(msg, sizeof msg, "R%llu", static_cast<unsigned long long>(bytes));
      sendto(fd, msg, static_cast<size_t>(m), 0, reinterpret_cast<sockaddr*>(&from), fl);
      bytes = 0;
    } else if (buf[0] == 'Q') {
      return 0;
    }
  }
}

// Sends `len`-byte entries (`batch` per sendmmsg) for 2 s, then asks the
// server how much arrived and prints it as `name`.
void raw_throughput(int fd, const char* name, char* data, std::size_t len, unsigned batch) {
  std::vector<mmsghdr> msgs(batch);
  iovec iov{data, len};
  for (auto& m : msgs) {
    m = mmsghdr{};
    m.msg_hdr.msg_iov = &iov;
    m.msg_hdr.msg_iovlen = 1;
  }
  const double t0 = now_us();
  while (now_us() - t0 < 2e6) sendmmsg(fd, msgs.data(), batch, 0);
  usleep(50000);
  const double us = now_us() - t0 - 50000;
  send(fd, "E", 1, 0);
  char reply[64];
  const ssize_t r = recv(fd, reply, sizeof reply - 1, 0);
  reply[r > 0 ? r : 0] = 0;
  const double bytes = r > 0 ? std::strtod(reply + 1, nullptr) : 0;
  std::printf("{\"bench\":\"%s\",\"datagram\":%zu,\"MBps\":%.1f}\n", name, kDgram, bytes / us);
}

int raw_client(const char* ip, int port) {
  const int fd = socket(AF_INET, SOCK_DGRAM, 0);
  int sz = 4 << 20;
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sz, sizeof sz);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, ip, &a.sin_addr);
  connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  timeval tv{1, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  // Pingpong, 8-byte payload (plus our 1-byte tag), busy-polling like tsunagi.
  std::vector<double> t;
  char buf[65536] = "P1234567";
  for (int i = 0; i < 5100; ++i) {
    const double t0 = now_us();
    send(fd, buf, 9, 0);
    ssize_t r;
    while ((r = recv(fd, buf, sizeof buf, MSG_DONTWAIT)) < 0 && now_us() - t0 < 1e6) {
    }
    if (i >= 100) t.push_back(now_us() - t0);
  }
  std::sort(t.begin(), t.end());
  double mean = 0;
  for (double x : t) mean += x;
  mean /= static_cast<double>(t.size());
  std::printf("{\"bench\":\"raw_udp_pingpong\",\"bytes\":8,\"median_us\":%.2f,\"mean_us\":%.2f,"
              "\"p99_us\":%.2f}\n",
              t[t.size() / 2], mean, t[t.size() * 99 / 100]);
  // Throughput: 1472-byte datagrams for 2 s with sendmmsg batches of 32.
  static char data[44 * kDgram];
  std::memset(data, 'D', sizeof data);
  raw_throughput(fd, "raw_udp_throughput", data, kDgram, 32);
  // The same with segmentation offload (UDP_SEGMENT: 44 datagrams per send
  // entry, batches of 8), which tsunagi's udp transport uses for runs of
  // full datagrams: the limit for a sender that lets the kernel segment.
  const int seg = static_cast<int>(kDgram);
  if (setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg) == 0) {
    raw_throughput(fd, "raw_udp_throughput_gso", data, sizeof data, 8);
    const int off = 0;
    setsockopt(fd, SOL_UDP, UDP_SEGMENT, &off, sizeof off);
  }
  send(fd, "Q", 1, 0);
  return 0;
}

// Per-datagram CPU cost of authentication, one core, no network: sealing
// (header MAC + CRC, then the payload tag) and parsing, for full datagrams.
int run_mac(std::size_t mtu) {
  namespace udp = tsu::transport::udp;
  if (!udp::init_tag_crypto()) return 1;
  const udp::Secret key{0x0123456789abcdefull, 0xfedcba9876543210ull};
  udp::PayloadKey tag_key;
  for (unsigned i = 0; i < sizeof tag_key.k; ++i) tag_key.k[i] = static_cast<unsigned char>(i * 13 + 5);
  std::vector<std::byte> buf(mtu);
  for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<std::byte>(i * 31);
  constexpr int kN = 200000;
  for (const bool tagged : {false, true}) {
    const std::size_t payload = mtu - udp::kHeaderSize - (tagged ? udp::kTagSize : 0);
    udp::WireHeader h{};
    h.type = udp::kData;
    h.flags = udp::kFirst | udp::kLast;
    h.src_rank = 1;
    h.dst_rank = 0;
    h.payload_len = static_cast<uint32_t>(payload);
    uint64_t counter = 0;
    auto seal = [&] {
      h.seq++;
      h.payload_crc = udp::crc32c(buf.data() + udp::kHeaderSize, payload);
      udp::seal_header(h, key);
      std::memcpy(buf.data(), &h, udp::kHeaderSize);
      if (tagged) udp::seal_tag(buf.data(), udp::kHeaderSize + payload, tag_key, 1, counter++);
    };
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kN; ++i) seal();
    const double seal_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kN;
    udp::ParsedDatagram out;
    int ok = 0;
    t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kN; ++i)
      ok += udp::parse_datagram(buf, key, 0, 2, static_cast<uint32_t>(mtu), out, tagged ? &tag_key : nullptr) ==
            udp::ParseStatus::kOk;
    const double parse_ns = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count() / kN;
    if (ok != kN) {
      std::fprintf(stderr, "tsu-bench-net mac: a datagram did not parse\n");
      return 1;
    }
    std::printf("{\"bench\":\"udp_mac\",\"auth\":%d,\"datagram\":%zu,\"payload\":%zu,\"seal_ns\":%.1f,"
                "\"parse_ns\":%.1f,\"payload_MBps_one_core\":%.0f}\n",
                tagged ? 1 : 0, mtu, payload, seal_ns, parse_ns, static_cast<double>(payload) / (seal_ns + parse_ns) * 1e3);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  if (mode == "tsu") {
    bool quick = false, get_rate = false;
    std::string only;
    for (int i = 2; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--quick") quick = true;
      else if (a == "--only" && i + 1 < argc) only = argv[++i];
      else if (a == "--wait" && i + 1 < argc) {
        const std::string w = argv[++i];
        if (w == "quiet") g_wait = WaitMode::kQuiet;
        else if (w == "counter") g_wait = WaitMode::kCounter;
        else if (w != "yield") {
          std::fprintf(stderr, "tsu-bench-net tsu: --wait yield|quiet|counter, not '%s'\n", w.c_str());
          return 2;
        }
        g_wait_quiet = g_wait == WaitMode::kQuiet;
      }
      else if (a == "--get-rate") get_rate = true;
      else {
        std::fprintf(stderr, "tsu-bench-net tsu: unknown argument '%s'\n", a.c_str());
        return 2;
      }
    }
    return run_tsu(quick, only, get_rate);
  }
  if (mode == "mac") return run_mac(argc > 2 ? static_cast<std::size_t>(std::atoi(argv[2])) : 1472);
  if (mode == "raw-server" && argc > 2) return raw_server(std::atoi(argv[2]));
  if (mode == "raw-client" && argc > 3) return raw_client(argv[2], std::atoi(argv[3]));
  std::fprintf(stderr, "usage: tsu-bench-net tsu [--quick] [--only latency|bandwidth|bigbw|rate|fadd_sites] [--wait yield|quiet|counter] [--get-rate] | raw-server PORT | raw-client IP PORT | mac [DATAGRAM_BYTES]\n");
  return 2;
}
