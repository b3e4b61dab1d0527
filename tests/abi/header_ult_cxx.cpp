// <tsunagi/ult.hpp> compiled alone as C++20 and used by a job of one rank or
// more: the RAII runtime and scheduler, a typed join, the mutex, a typed
// spawn on the next rank.  Also built against an installed prefix
// (install_check.cmake).
#include <tsunagi/ult.hpp>

#include <cstdio>
#include <string>

namespace {
struct Pair {
  uint32_t a, b;
};
Pair swap_pair(const Pair& p) { return {p.b, p.a}; }
}  // namespace

int main() {
  try {
    tsu::runtime rt;
    tsu::ult::scheduler sched;
    const uint32_t me = tsu::runtime::rank(), n = tsu::runtime::size();
    tsu::ult::mutex mu;
    int sum = 0;
    tsu::ult::thread t([&] {
      std::lock_guard lock(mu);
      sum += 1;
      return std::string("joined");
    });
    const auto fn = tsu::ult::register_remote<swap_pair>(1);
    const Pair p = fn.spawn((me + 1) % n, Pair{me, 7}).join();
    if (t.join() != "joined" || sum != 1 || p.a != 7 || p.b != me) {
      std::fprintf(stderr, "rank %u: ult.hpp check failed\n", me);
      return 1;
    }
    std::printf("rank %u: ult.hpp ok\n", me);
  } catch (const tsu::error& e) {
    std::fprintf(stderr, "tsu::error %d: %s\n", static_cast<int>(e.code()), e.what());
    return 1;
  }
  return 0;
}
