// The C++ header's messaging wrappers (public API only, shared library):
// lambdas as AM handlers and callbacks, futures for receives and collectives.
#include <tsunagi/tsunagi.hpp>

#include <atomic>
#include <cstdio>
#include <vector>

#define EXPECT(cond)                                                                   \
  do {                                                                                 \
    if (!(cond)) {                                                                     \
      std::fprintf(stderr, "%s:%d: %s failed (%s)\n", __FILE__, __LINE__, #cond,       \
                   tsu_last_error());                                                  \
      return 1;                                                                        \
    }                                                                                  \
  } while (0)

int main() {
  try {
    tsu::runtime rt;
    const uint32_t me = tsu::runtime::rank(), n = tsu::runtime::size();
    // AM: a lambda handler that replies; the reply handler counts.
    std::atomic<uint64_t> replies{0}, sum{0};
    EXPECT(tsu::am_register(1, [](tsu::am_message& m) { m.reply(2, {m.args[0] * 2}); }) == TSU_OK);
    EXPECT(tsu::am_register(2, [&](tsu::am_message& m) {
             sum += m.args[0];
             replies++;
           }) == TSU_OK);
    int sent = 0;
    for (uint32_t d = 0; d < n; ++d)
      EXPECT(tsu::try_am_short(d, 1, {uint64_t{d} + 1}, [&](tsu_status_t st) { sent += st == TSU_OK; }) ==
             TSU_OK);
    EXPECT(sent == static_cast<int>(n));
    tsu::am_medium((me + 1) % n, 1, {5}, "hello", 5).get();
    while (replies.load() < n + 1) tsu_progress();
    EXPECT(sum.load() == n * (n + 1) + 10);
    // Tagged: future receive, lambda send.
    const uint32_t to = (me + 1) % n, from = (me + n - 1) % n;
    std::vector<int> in(1000), out(1000);
    for (int i = 0; i < 1000; ++i) out[i] = static_cast<int>(me) * 1000 + i;
    auto r = tsu::recv(from, 42, in.data(), in.size() * sizeof(int));
    bool send_done = false;
    EXPECT(tsu::try_send(to, 42, out.data(), out.size() * sizeof(int),
                         [&](tsu_status_t st) { send_done = st == TSU_OK; }) == TSU_OK);
    const tsu_msg_status_t st = r.get();
    EXPECT(st.source == from && st.length == 4000 && in[999] == static_cast<int>(from) * 1000 + 999);
    while (!send_done) tsu_progress();
    // A truncated receive throws from get().
    auto small = tsu::recv(from, 43, in.data(), 4);
    tsu::send(to, 43, out.data(), 8).get();
    bool threw = false;
    try {
      small.get();
    } catch (const tsu::error& e) {
      threw = e.code() == TSU_ERR_TRUNCATED;
    }
    EXPECT(threw);
    // Collectives through futures.
    EXPECT(tsu::allreduce<uint64_t>(me + 1, TSU_OP_SUM).get() == uint64_t{n} * (n + 1) / 2);
    double v[2] = {1.5 * me, -1.0 * me}, res[2];
    tsu::allreduce(v, res, 2, TSU_OP_MAX).get();
    EXPECT(res[0] == 1.5 * (n - 1) && res[1] == 0.0);
    std::vector<uint32_t> ranks(n);
    tsu::allgather(&me, ranks.data(), sizeof me).get();
    for (uint32_t i = 0; i < n; ++i) EXPECT(ranks[i] == i);
    tsu::barrier().get();
    EXPECT(tsu::am_register(1, nullptr) == TSU_OK && tsu::am_register(2, nullptr) == TSU_OK);
    if (me == 0) std::printf("cxx messaging: OK on %u ranks\n", n);
  } catch (const tsu::error& e) {
    std::fprintf(stderr, "cxx messaging: %s\n", e.what());
    return 1;
  }
  return 0;
}
