// Rank program for the tsurun tests: `tsurun_helper MODE [ARGS]`, one mode
// per behaviour under test (see the switch in main).  Links only the
// bootstrap sources, not the tsunagi library.
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bootstrap/bootstrap.hpp"
#include "bootstrap/local/local_bootstrap.hpp"
#include "bootstrap/local/wire.hpp"

namespace bs = tsu::bootstrap;

namespace {

uint32_t env_u32(const char* name) {
  const char* v = std::getenv(name);
  return v ? static_cast<uint32_t>(std::strtoul(v, nullptr, 10)) : 0;
}

void sleep_s(double s) { std::this_thread::sleep_for(std::chrono::duration<double>(s)); }

[[noreturn]] void die(const std::string& msg) {
  std::fprintf(stderr, "helper rank %u: FAIL: %s\n", env_u32("TSU_RANK"), msg.c_str());
  std::exit(99);
}

std::vector<std::byte> bytes_of(const std::string& s) {
  std::vector<std::byte> b(s.size());
  std::memcpy(b.data(), s.data(), s.size());
  return b;
}

std::string error_of(bs::Bootstrap& b) {
  if (auto* l = dynamic_cast<bs::LocalBootstrap*>(&b)) return l->last_error();
  if (auto* s = dynamic_cast<bs::SingletonBootstrap*>(&b)) return s->last_error();
  return "?";
}

std::unique_ptr<bs::Bootstrap> connect_or_die() {
  tsu_status_t st = TSU_OK;
  std::string err;
  auto b = bs::make_from_environment(st, err);
  if (!b || st != TSU_OK) die("make_from_environment: " + err);
  return b;
}

void check(bs::Bootstrap& b, tsu_status_t st, const char* what) {
  if (st != TSU_OK) die(std::string(what) + " failed: " + error_of(b));
}

std::string big_value(uint32_t rank) {
  std::string v(200 * 1024, '\0');  // larger than a socket buffer: exercises partial I/O
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<char>('a' + (i * 7 + rank) % 26);
  return v;
}

// Every rank publishes, then checks every other rank's values, then runs
// `iters` barriers.
int mode_bootstrap(int iters) {
  auto b = connect_or_die();
  const uint32_t me = b->rank(), n = b->size();
  if (me != env_u32("TSU_RANK") || n != env_u32("TSU_SIZE")) die("rank/size mismatch");
  check(*b, b->put("k." + std::to_string(me), bytes_of("value-of-" + std::to_string(me))), "put");
  check(*b, b->put("big." + std::to_string(me), bytes_of(big_value(me))), "put big");
  check(*b, b->barrier(), "barrier");
  for (uint32_t r = 0; r < n; ++r) {
    std::vector<std::byte> v;
    check(*b, b->get("k." + std::to_string(r), v), "get");
    if (v != bytes_of("value-of-" + std::to_string(r))) die("wrong value for k." + std::to_string(r));
    check(*b, b->get("big." + std::to_string(r), v), "get big");
    if (v != bytes_of(big_value(r))) die("wrong value for big." + std::to_string(r));
  }
  // A get issued before the put must wait for it: rank 0 publishes late.
  if (me == 0) {
    sleep_s(0.2);
    check(*b, b->put("late", bytes_of("late-value")), "put late");
  } else {
    std::vector<std::byte> v;
    check(*b, b->get("late", v), "get late");
    if (v != bytes_of("late-value")) die("wrong late value");
  }
  for (int i = 0; i < iters; ++i) check(*b, b->barrier(), "repeated barrier");
  check(*b, b->finalize(), "finalize");
  if (b->barrier() == TSU_OK) die("barrier after finalize succeeded");
  std::printf("bootstrap ok rank %u\n", me);
  return 0;
}

// Rank `victim` dies (exit 7) while the others wait in a barrier.
int mode_bootstrap_die(uint32_t victim) {
  auto b = connect_or_die();
  if (b->rank() == victim) {
    sleep_s(0.3);
    std::_Exit(7);
  }
  b->barrier();  // never completes; tsurun stops us
  sleep_s(60);
  return 0;
}

// Rank `victim` leaves cleanly without the barrier the others wait in.
int mode_bootstrap_early_exit(uint32_t victim) {
  auto b = connect_or_die();
  if (b->rank() == victim) return 0;
  b->barrier();
  die("barrier completed without rank " + std::to_string(victim));
}

// Rank `victim` first sends a garbage frame on a raw connection; the
// server must drop only that connection and go on serving the job.
int mode_garbage(uint32_t victim) {
  if (env_u32("TSU_RANK") == victim) {
    const std::string path = std::string(std::getenv("TSU_BOOTSTRAP")).substr(5);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::strncpy(a.sun_path, path.c_str(), sizeof(a.sun_path) - 1);
    if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) die("raw connect");
    const unsigned char junk[] = {0xff, 0xff, 0xff, 0xff, 0x42, 'j', 'u', 'n', 'k'};
    if (::send(fd, junk, sizeof(junk), MSG_NOSIGNAL) < 0) die("raw send");
    char buf[256];
    while (::recv(fd, buf, sizeof(buf), 0) > 0) {
    }  // the server answers Error, then closes
    ::close(fd);
  }
  auto b = connect_or_die();
  check(*b, b->barrier(), "barrier");
  check(*b, b->finalize(), "finalize");
  return 0;
}

// Rank `victim` connects a second time after it was admitted: the service
// must refuse the second claim of the rank (with the right secret) and go on.
int mode_claim_twice(uint32_t victim) {
  auto b = connect_or_die();
  if (b->rank() == victim) {
    tsu_status_t st = TSU_OK;
    std::string err;
    auto again = bs::make_from_environment(st, err);
    if (again || st == TSU_OK) die("a second claim of rank " + std::to_string(victim) + " was accepted");
    std::printf("second claim refused: %s\n", err.c_str());
  }
  check(*b, b->barrier(), "barrier");
  check(*b, b->finalize(), "finalize");
  return 0;
}

int mode_singleton() {
  auto b = connect_or_die();
  if (b->rank() != 0 || b->size() != 1) die("singleton rank/size");
  check(*b, b->put("a", bytes_of("1")), "put");
  std::vector<std::byte> v;
  check(*b, b->get("a", v), "get");
  if (v != bytes_of("1")) die("singleton value");
  if (b->get("missing", v) != TSU_ERR_BOOTSTRAP) die("get of a missing key did not fail");
  if (error_of(*b).empty()) die("no error text");
  check(*b, b->barrier(), "barrier");
  check(*b, b->finalize(), "finalize");
  std::printf("singleton ok\n");
  return 0;
}

tsu_status_t try_env(const char* rank, const char* size, const char* spec, std::string& err) {
  ::setenv("TSU_RANK", rank, 1);
  ::setenv("TSU_SIZE", size, 1);
  ::setenv("TSU_BOOTSTRAP", spec, 1);
  tsu_status_t st = TSU_OK;
  auto b = bs::make_from_environment(st, err);
  if ((b == nullptr) == (st == TSU_OK)) die("status and result disagree");
  return st;
}

int mode_config() {
  std::string err;
  const struct {
    const char *rank, *size, *spec;
    tsu_status_t want;
  } cases[] = {
      {"abc", "2", "unix:/nonexistent/sock", TSU_ERR_CONFIG},
      {"2", "2", "unix:/nonexistent/sock", TSU_ERR_CONFIG},
      {"-1", "2", "unix:/nonexistent/sock", TSU_ERR_CONFIG},
      {"0", "0", "unix:/nonexistent/sock", TSU_ERR_CONFIG},
      {"0", "2x", "unix:/nonexistent/sock", TSU_ERR_CONFIG},
      {"0", "2", "tcp:1.2.3.4", TSU_ERR_CONFIG},
      {"0", "2", "unix:/nonexistent/sock", TSU_ERR_BOOTSTRAP},
  };
  for (const auto& c : cases) {
    err.clear();
    const tsu_status_t st = try_env(c.rank, c.size, c.spec, err);
    std::printf("rank=%s size=%s spec=%s -> %d (%s)\n", c.rank, c.size, c.spec, st, err.c_str());
    if (st != c.want || err.empty()) die("unexpected result");
  }
  std::printf("config ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 98;
  const std::string mode = argv[1];
  const uint32_t rank = env_u32("TSU_RANK");
  const uint32_t size = env_u32("TSU_SIZE");
  auto arg = [&](int i) { return i < argc ? static_cast<uint32_t>(std::strtoul(argv[i], nullptr, 10)) : 0u; };

  if (mode == "hello") {
    std::printf("hello from rank %u of %u\n", rank, size);
    std::fprintf(stderr, "note from rank %u\n", rank);
    return 0;
  }
  if (mode == "lines") {
    // Each line is written in two pieces with a pause, so unbuffered
    // forwarding would interleave ranks mid-line.
    for (int i = 0; i < 20; ++i) {
      const std::string a = "part-A ", b = "part-B " + std::to_string(rank) + "\n";
      if (::write(1, a.data(), a.size()) < 0) return 97;
      sleep_s(0.005);
      if (::write(1, b.data(), b.size()) < 0) return 97;
    }
    return 0;
  }
  if (mode == "exit-rank") {  // exit-rank R CODE: rank R exits CODE, the others hang
    if (rank == arg(2)) {
      sleep_s(0.3);
      return static_cast<int>(arg(3));
    }
    sleep_s(60);
    return 0;
  }
  if (mode == "segv-rank") {
    if (rank == arg(2)) {
      sleep_s(0.3);
      rlimit no_core{0, 0};
      ::setrlimit(RLIMIT_CORE, &no_core);  // no core dump to slow the test down
      std::signal(SIGSEGV, SIG_DFL);       // die by the signal even under a sanitizer
      std::raise(SIGSEGV);
    }
    sleep_s(60);
    return 0;
  }
  if (mode == "sleep") {
    sleep_s(std::atof(argc > 2 ? argv[2] : "60"));
    return 0;
  }
  if (mode == "ignore-term") {  // only SIGKILL stops this rank
    std::signal(SIGTERM, SIG_IGN);
    sleep_s(60);
    return 0;
  }
  if (mode == "env") {
    const char* node = std::getenv("TSU_NODE_ID");
    const char* job = std::getenv("TSU_JOBID");
    const char* boot = std::getenv("TSU_BOOTSTRAP");
    std::printf("rank=%u size=%u node=%s local=%s jobid=%s bootstrap=%s\n", rank, size, node ? node : "unset",
                std::getenv("TSU_LOCAL_RANK"), job && *job ? "set" : "unset",
                boot && std::strncmp(boot, "unix:", 5) == 0 ? "unix" : "other");
    return 0;
  }
  if (mode == "bootstrap") return mode_bootstrap(static_cast<int>(arg(2)));
  if (mode == "bootstrap-die") return mode_bootstrap_die(arg(2));
  if (mode == "bootstrap-early-exit") return mode_bootstrap_early_exit(arg(2));
  if (mode == "garbage") return mode_garbage(arg(2));
  if (mode == "singleton") return mode_singleton();
  if (mode == "claim-twice") return mode_claim_twice(arg(2));
  if (mode == "config") return mode_config();
  std::fprintf(stderr, "unknown mode %s\n", mode.c_str());
  return 98;
}
