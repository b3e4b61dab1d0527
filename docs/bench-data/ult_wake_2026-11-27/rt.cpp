// Round trips done inside ULTs: T ULTs per rank on one worker; ULT i on rank 0
// sends 8 bytes to its partner on rank 1 and waits (tsu_counter_wait) for the
// reply.  Rank 0 prints per-round-trip latency (median, mean, p99) and the
// process CPU time (all threads) per round trip.
#include <tsunagi/tsunagi.h>
#include <tsunagi/ult.h>
#include <sys/resource.h>
#include <time.h>
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

static uint32_t g_rank, T = 64, R = 200;
static std::vector<std::vector<double>> g_lat;

static double now_us() { timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3; }
static double cpu_s() { rusage u; getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6; }

static void send_v(uint32_t dst, uint64_t tag, const uint64_t* v) {
  tsu_counter_t c; tsu_counter_init(&c);
  while (tsu_try_send(dst, tag, v, sizeof *v, tsu_counter_cb(&c)) == TSU_EAGAIN) tsu_ult_yield();
  tsu_counter_wait(&c, 1);
}
static uint64_t recv_v(uint32_t src, uint64_t tag) {
  uint64_t v = 0; tsu_counter_t c; tsu_counter_init(&c); tsu_msg_status_t st;
  if (tsu_try_recv(src, tag, TSU_TAG_EXACT, &v, sizeof v, &st, tsu_counter_cb(&c), nullptr) != TSU_OK) std::abort();
  tsu_counter_wait(&c, 1);
  return v;
}
static void* body(void* a) {
  const uint32_t i = (uint32_t)(uintptr_t)a;
  for (uint32_t r = 0; r < R; ++r) {
    const uint64_t tag = (uint64_t)i << 32 | r, v = tag;
    if (g_rank == 0) {
      const double t0 = now_us();
      send_v(1, tag, &v);
      if (recv_v(1, tag) != v + 1) std::abort();
      g_lat[i].push_back(now_us() - t0);
    } else {
      const uint64_t in = recv_v(0, tag) + 1;
      send_v(0, tag, &in);
    }
  }
  tsu_quiet();
  return nullptr;
}
int main(int argc, char** argv) {
  if (argc > 1) T = atoi(argv[1]);
  if (argc > 2) R = atoi(argv[2]);
  tsu_init(nullptr); tsu_rank(&g_rank);
  tsu_ult_config_t cfg{}; cfg.struct_size = sizeof cfg; cfg.field_mask = TSU_ULT_CONFIG_WORKERS; cfg.workers = 1;
  tsu_ult_init(&cfg);
  g_lat.assign(T, {});
  tsu_barrier();
  const double c0 = cpu_s(), w0 = now_us();
  std::vector<tsu_ult_t> ts(T);
  for (uint32_t k = 0; k < T; ++k) tsu_ult_create(&ts[k], nullptr, body, (void*)(uintptr_t)k);
  for (auto t : ts) tsu_ult_join(t, nullptr);
  const double wall = now_us() - w0, cpu = cpu_s() - c0;
  tsu_ult_finalize();
  if (g_rank == 0) {
    std::vector<double> all; for (auto& v : g_lat) all.insert(all.end(), v.begin(), v.end());
    std::sort(all.begin(), all.end()); double sum = 0; for (double x : all) sum += x;
    const double n = all.size();
    std::printf("T=%u R=%u median_us=%.2f mean_us=%.2f p99_us=%.2f wall_ms=%.2f cpu_ms=%.2f cpu_us_per_rt=%.3f\n",
                T, R, all[all.size() / 2], sum / n, all[(size_t)(0.99 * n)], wall / 1e3, cpu * 1e3, cpu * 1e6 / n);
  }
  tsu_finalize();
  return 0;
}
