#include "launcher.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <span>
#include <sstream>

#include "bootstrap_server.hpp"
#include "log.hpp"
#include "output_forwarder.hpp"

extern char** environ;

namespace tsurun {

namespace {

constexpr auto kKillGrace = std::chrono::seconds(2);      // SIGTERM -> SIGKILL
constexpr auto kOutputDrain = std::chrono::seconds(1);    // after the last rank exits
constexpr const char* kSocketName = "bootstrap.sock";

// Self-pipe: signal handlers only write the signal number here; the poll
// loop does the real work, so nothing unsafe runs in a handler.
int g_signal_pipe[2] = {-1, -1};

extern "C" void on_signal_handler(int sig) {
  const int saved = errno;
  const auto b = static_cast<unsigned char>(sig);
  if (::write(g_signal_pipe[1], &b, 1) < 0) {
  }  // pipe full: a wake-up is already pending, and reap() polls every rank anyway
  errno = saved;
}

bool install_signal_handlers(std::string& error) {
  if (::pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0) {
    error = std::string("pipe: ") + std::strerror(errno);
    return false;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal_handler;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) ::sigaction(sig, &sa, nullptr);
  // A rank that closes its socket or a reader of our stdout that goes away
  // must give EPIPE, not kill the launcher.
  ::signal(SIGPIPE, SIG_IGN);
  return true;
}

// Many ranks need three descriptors each here; lift the soft limit.
void raise_fd_limit() {
  rlimit rl{};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}

// Private (0700) directory holding the bootstrap socket; removed on every
// exit path that unwinds (signals are turned into loop events for this).
class TempDir {
 public:
  ~TempDir() {
    if (path_.empty()) return;
    ::unlink((path_ + "/" + kSocketName).c_str());
    ::rmdir(path_.c_str());
  }
  bool create(std::string& error) {
    std::string base = "/tmp";
    if (const char* t = std::getenv("TMPDIR"); t != nullptr && *t != '\0') base = t;
    // sockaddr_un holds 108 bytes; a deep TMPDIR would not fit.
    if (base.size() + 40 > 107) base = "/tmp";
    std::string tmpl = base + "/tsurun.XXXXXX";
    if (::mkdtemp(tmpl.data()) == nullptr) {
      error = "cannot create a directory in " + base + ": " + std::strerror(errno);
      return false;
    }
    path_ = tmpl;
    return true;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string describe_status(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return "killed by signal " + std::to_string(sig) + " (" + (name ? name : "?") + ")";
  }
  return "ended with wait status " + std::to_string(status);
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

}  // namespace

Launcher::Launcher(Options opts) : opts_(std::move(opts)), ranks_(opts_.nranks) {
  job_id_ = std::to_string(::getpid()) + "-" +
            std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count());
}

std::vector<std::string> Launcher::rank_environment(uint32_t rank, int secret_fd) const {
  std::vector<std::string> owned = {"TSU_RANK=", "TSU_SIZE=", "TSU_BOOTSTRAP=", "TSU_JOBID=",
                                    "TSU_LOCAL_RANK=", "TSU_JOB_SECRET=", "TSU_JOB_SECRET_FD=",
                                    "TSU_PLACEMENT="};
  // Without --ranks-per-node or --hosts a TSU_NODE_ID from the user passes through.
  if (opts_.ranks_per_node > 0 || !opts_.hosts.empty()) owned.push_back("TSU_NODE_ID=");
  std::vector<std::string> env;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view var(*e);
    bool ours = false;
    for (const auto& o : owned) ours = ours || var.starts_with(o);
    if (!ours) env.emplace_back(var);
  }
  const uint32_t rpn = opts_.ranks_per_node;
  env.push_back("TSU_RANK=" + std::to_string(rank));
  env.push_back("TSU_SIZE=" + std::to_string(opts_.nranks));
  env.push_back("TSU_BOOTSTRAP=" + bootstrap_spec_);
  env.push_back("TSU_JOBID=" + job_id_);
  // The secret itself never goes into the environment or onto a command line:
  // the rank reads it from this descriptor (a pipe, or stdin under --spawn).
  env.push_back("TSU_JOB_SECRET_FD=" + std::to_string(secret_fd));
  // TSU_PLACEMENT tells every rank the whole layout, so ranks need not
  // publish and fetch each other's node (docs/scaling.md).
  if (rpn > 0) {
    env.push_back("TSU_LOCAL_RANK=" + std::to_string(rank % rpn));
    env.push_back("TSU_NODE_ID=" + std::to_string(rank / rpn));
    env.push_back("TSU_PLACEMENT=block:" + std::to_string(rpn));
  } else if (!opts_.hosts.empty()) {
    env.push_back("TSU_LOCAL_RANK=" + std::to_string(local_rank(rank)));
    env.push_back("TSU_NODE_ID=" + opts_.hosts[host_of(rank)]);
    if (hosts_distinct()) {
      const auto h = static_cast<uint32_t>(opts_.hosts.size());
      env.push_back(opts_.round_robin ? "TSU_PLACEMENT=cyclic:" + std::to_string(h)
                                      : "TSU_PLACEMENT=block:" + std::to_string((opts_.nranks + h - 1) / h));
    }
  } else {
    env.push_back("TSU_LOCAL_RANK=" + std::to_string(rank));
  }
  return env;
}

bool Launcher::hosts_distinct() const {
  for (std::size_t i = 0; i < opts_.hosts.size(); ++i)
    for (std::size_t j = i + 1; j < opts_.hosts.size(); ++j)
      if (opts_.hosts[i] == opts_.hosts[j]) return false;
  return true;
}

uint32_t Launcher::host_of(uint32_t rank) const {
  const auto h = static_cast<uint32_t>(opts_.hosts.size());
  if (opts_.round_robin) return rank % h;
  const uint32_t per = (opts_.nranks + h - 1) / h;
  return rank / per;
}

uint32_t Launcher::local_rank(uint32_t rank) const {
  uint32_t n = 0;
  for (uint32_t r = 0; r < rank; ++r) n += host_of(r) == host_of(rank) ? 1 : 0;
  return n;
}

namespace {
// The local address that routes to `host` (no packet is sent: connect() on a
// UDP socket only picks the route), or "" when the host does not resolve.
std::string local_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &res) != 0 || !res) return "";
  std::string out;
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd >= 0 && ::connect(fd, res->ai_addr, res->ai_addrlen) == 0) {
    sockaddr_in local{};
    socklen_t len = sizeof local;
    char ip[INET_ADDRSTRLEN] = {};
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&local), &len) == 0 &&
        ::inet_ntop(AF_INET, &local.sin_addr, ip, sizeof ip))
      out = ip;
  }
  if (fd >= 0) ::close(fd);
  ::freeaddrinfo(res);
  return out;
}
}  // namespace

bool Launcher::start_tcp_bootstrap(BootstrapServer& server, std::string& error) {
  std::string ip = opts_.bootstrap_addr;
  uint16_t port = 0;
  if (const auto colon = ip.find(':'); colon != std::string::npos) {
    port = static_cast<uint16_t>(std::strtoul(ip.c_str() + colon + 1, nullptr, 10));
    ip.resize(colon);
  }
  if (ip.empty()) ip = local_address_towards(opts_.hosts.front());
  if (ip.empty()) {
    ip = "127.0.0.1";
    report("cannot derive a bootstrap address from host '" + opts_.hosts.front() +
           "'; using 127.0.0.1 (set --bootstrap-addr)");
  }
  uint16_t bound = 0;
  if (!server.listen_tcp(ip, port, bound, error)) return false;
  bootstrap_spec_ = "tcp:" + ip + ":" + std::to_string(bound);
  return true;
}

// Returns 0, or the exit status for tsurun after reporting why it failed.
int Launcher::spawn(uint32_t rank, OutputForwarder& out) {
  // The job secret travels in a pipe: a local rank reads it from the pipe's
  // own descriptor, a rank started through --spawn from its stdin (ssh and
  // `ip netns exec` pass stdin through; nothing else reaches a remote host
  // unseen).  The pipe holds one line, then EOF.
  int secretp[2];
  if (::pipe2(secretp, O_CLOEXEC) != 0) {
    report(std::string("pipe: ") + std::strerror(errno));
    return kExitInternal;
  }
  {
    const std::string line = secret_ + "\n";  // 33 bytes: fits the pipe buffer, never blocks
    const bool ok = ::write(secretp[1], line.data(), line.size()) == static_cast<ssize_t>(line.size());
    ::close(secretp[1]);
    if (!ok) {
      ::close(secretp[0]);
      report(std::string("cannot write the job secret to the rank's pipe: ") + std::strerror(errno));
      return kExitInternal;
    }
  }
  const bool via_stdin = !opts_.spawn.empty();
  const int secret_fd = secretp[0];
  // Everything is prepared before fork: the child only calls async-signal-safe functions.
  std::vector<std::string> env = rank_environment(rank, via_stdin ? STDIN_FILENO : secret_fd);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  // With --spawn: TEMPLATE(host) env TSU_...=... PROGRAM ARGS, so the rank's
  // variables survive a remote shell (ssh) as well as `ip netns exec`.
  std::vector<std::string> words;
  if (!opts_.spawn.empty()) {
    std::string tmpl = opts_.spawn;
    const std::string& host = opts_.hosts[host_of(rank)];
    for (std::size_t at; (at = tmpl.find("{host}")) != std::string::npos;) tmpl.replace(at, 6, host);
    std::istringstream in(tmpl);
    for (std::string w; in >> w;) words.push_back(w);
    words.push_back("env");
    for (const auto& e : env)
      if (e.starts_with("TSU_")) words.push_back(e);
  }
  for (const auto& a : opts_.command) words.push_back(a);
  std::vector<char*> argv;
  for (auto& a : words) argv.push_back(a.data());
  argv.push_back(nullptr);

  int outp[2], errp[2], execp[2];
  if (::pipe2(outp, O_CLOEXEC) != 0 || ::pipe2(errp, O_CLOEXEC) != 0 || ::pipe2(execp, O_CLOEXEC) != 0) {
    report(std::string("pipe: ") + std::strerror(errno));
    ::close(secret_fd);
    return kExitInternal;
  }
  const pid_t parent = ::getpid();
  // Block signals across fork so the child cannot run our handlers before
  // it resets them.
  sigset_t all, old;
  sigfillset(&all);
  ::sigprocmask(SIG_BLOCK, &all, &old);
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Own process group: stopping a rank with kill(-pgid) also stops its children.
    ::setpgid(0, 0);
    // Die with tsurun, even if it is SIGKILLed; re-check in case it already died.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(kExitNoExec);
    for (int sig : {SIGCHLD, SIGINT, SIGTERM, SIGHUP, SIGPIPE}) ::signal(sig, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    // Ranks run in background process groups; reading the terminal would stop
    // them.  Their stdin is the secret pipe (--spawn) or /dev/null.
    if (via_stdin) {
      ::dup2(secret_fd, STDIN_FILENO);
    } else {
      const int devnull = ::open("/dev/null", O_RDONLY);
      if (devnull >= 0) ::dup2(devnull, STDIN_FILENO);
      ::fcntl(secret_fd, F_SETFD, 0);  // inherited across exec, under its own number
    }
    ::dup2(outp[1], STDOUT_FILENO);
    ::dup2(errp[1], STDERR_FILENO);
    ::execvpe(argv[0], argv.data(), envp.data());
    const int err = errno;
    if (::write(execp[1], &err, sizeof(err)) < 0) {
    }
    ::_exit(kExitNoExec);
  }
  const int fork_errno = errno;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  ::close(secret_fd);
  ::close(outp[1]);
  ::close(errp[1]);
  ::close(execp[1]);
  if (pid < 0) {
    ::close(outp[0]);
    ::close(errp[0]);
    ::close(execp[0]);
    report(std::string("fork: ") + std::strerror(fork_errno));
    return kExitInternal;
  }
  ::setpgid(pid, pid);  // also here, so the group exists before we might signal it
  ranks_[rank].pid = pid;
  set_nonblocking(outp[0]);
  set_nonblocking(errp[0]);
  out.add_stream(rank, outp[0], STDOUT_FILENO);
  out.add_stream(rank, errp[0], STDERR_FILENO);

  // The exec pipe closes on a successful exec (CLOEXEC) or carries exec's errno.
  int exec_errno = 0;
  ssize_t n;
  do {
    n = ::read(execp[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  ::close(execp[0]);
  if (n == static_cast<ssize_t>(sizeof(exec_errno))) {
    report("cannot execute '" + std::string(argv[0]) + "': " + std::strerror(exec_errno));
    return kExitNoExec;
  }
  if (opts_.verbose) report("rank " + std::to_string(rank) + " started (pid " + std::to_string(pid) + ")");
  return 0;
}

void Launcher::reap() {
  for (uint32_t r = 0; r < ranks_.size(); ++r) {
    Rank& rk = ranks_[r];
    if (rk.pid <= 0 || rk.reaped) continue;
    pid_t got;
    do {
      got = ::waitpid(rk.pid, &rk.status, WNOHANG);
    } while (got < 0 && errno == EINTR);
    if (got == rk.pid) {
      rk.reaped = true;
      on_rank_exit(r);
    }
  }
}

void Launcher::on_rank_exit(uint32_t rank) {
  const Rank& rk = ranks_[rank];
  const std::string what =
      "rank " + std::to_string(rank) + " (pid " + std::to_string(rk.pid) + ") " + describe_status(rk.status);
  const bool ok = WIFEXITED(rk.status) && WEXITSTATUS(rk.status) == 0;
  if (ok || stopping_) {
    // Exits caused by our own stop signals are expected; only -v shows them.
    if (opts_.verbose) report(what);
    return;
  }
  if (opts_.tolerate_rank_loss) {
    report(what + "; rank " + std::to_string(rank) + " is lost, " + std::to_string(live_rank_count()) +
           " rank(s) continue without it");
    if (exit_code_ == 0) exit_code_ = WIFEXITED(rk.status) ? WEXITSTATUS(rk.status) : 128 + WTERMSIG(rk.status);
    if (server_) server_->mark_lost(rank);
    return;
  }
  report(what);
  const size_t others = live_rank_count();
  if (others > 0) report("stopping " + std::to_string(others) + " remaining rank(s): " + live_rank_list());
  stop_job(WIFEXITED(rk.status) ? WEXITSTATUS(rk.status) : 128 + WTERMSIG(rk.status), SIGTERM);
}

void Launcher::on_signal(int sig) {
  if (sig == SIGCHLD) return reap();
  if (stopping_) {
    // Second interrupt: the user does not want to wait for the grace period.
    report(std::string("received ") + ::strsignal(sig) + " again; killing all ranks");
    return signal_live_ranks(SIGKILL);
  }
  report(std::string("received signal ") + std::to_string(sig) + " (" + ::strsignal(sig) + "); forwarding it to " +
         std::to_string(live_rank_count()) + " rank(s)");
  stop_job(128 + sig, sig);
}

void Launcher::stop_job(int code, int sig) {
  if (stopping_) return;
  stopping_ = true;
  exit_code_ = code;
  signal_live_ranks(sig);
  if (sig != SIGKILL) kill_at_ = Clock::now() + kKillGrace;
}

void Launcher::signal_live_ranks(int sig) {
  for (const Rank& rk : ranks_) {
    // An unreaped rank still owns its pid, so its group id cannot have been reused.
    if (rk.pid > 0 && !rk.reaped && ::kill(-rk.pid, sig) != 0) ::kill(rk.pid, sig);
  }
}

size_t Launcher::live_rank_count() const {
  size_t n = 0;
  for (const Rank& rk : ranks_) n += (rk.pid > 0 && !rk.reaped) ? 1 : 0;
  return n;
}

std::string Launcher::live_rank_list() const {
  std::string s;
  for (uint32_t r = 0; r < ranks_.size(); ++r) {
    if (ranks_[r].pid <= 0 || ranks_[r].reaped) continue;
    s += (s.empty() ? "" : ",") + std::to_string(r);
  }
  return s;
}

int Launcher::run() {
  std::string error;
  if (!install_signal_handlers(error)) {
    report(error);
    return kExitInternal;
  }
  raise_fd_limit();
  TempDir dir;
  if (!dir.create(error)) {
    report(error);
    return kExitInternal;
  }
  socket_path_ = dir.path() + "/" + kSocketName;
  // The per-job secret: it keys the bootstrap handshake and every udp datagram.
  {
    unsigned char key[16];
    if (::getrandom(key, sizeof key, 0) != static_cast<ssize_t>(sizeof key)) {
      report(std::string("getrandom: ") + std::strerror(errno));
      return kExitInternal;
    }
    std::copy(std::begin(key), std::end(key), secret_bytes_.begin());
    secret_ = tsu::bootstrap::auth::to_hex(secret_bytes_);
  }
  BootstrapServer server(opts_.nranks, opts_.verbose, secret_bytes_, job_id_);
  server_ = &server;
  if (opts_.hosts.empty()) {
    if (!server.listen(socket_path_, error)) {
      report(error);
      return kExitInternal;
    }
    bootstrap_spec_ = "unix:" + socket_path_;
  } else if (!start_tcp_bootstrap(server, error)) {
    report(error);
    return kExitInternal;
  }
  OutputForwarder out(opts_.tag_output);

  if (opts_.verbose)
    report("job " + job_id_ + ": starting " + std::to_string(opts_.nranks) + " rank(s) of '" + opts_.command[0] +
           "', bootstrap " + bootstrap_spec_);
  for (uint32_t r = 0; r < opts_.nranks; ++r) {
    if (const int code = spawn(r, out); code != 0) {
      stop_job(code, SIGKILL);  // the ranks already started cannot bootstrap without this one
      break;
    }
  }

  std::optional<Clock::time_point> deadline;
  if (opts_.timeout_s > 0)
    deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(opts_.timeout_s));
  std::optional<Clock::time_point> drain_until;
  std::vector<bool> exited(ranks_.size());
  std::vector<pollfd> fds;

  for (;;) {
    reap();  // also catches exits whose SIGCHLD coalesced with another
    const auto now = Clock::now();
    if (live_rank_count() == 0) {
      if (!drain_until) drain_until = now + kOutputDrain;
      // A rank's background child may hold a pipe open; do not wait for it forever.
      if (out.all_closed() || now >= *drain_until) break;
    }
    if (deadline && !stopping_ && now >= *deadline) {
      std::ostringstream s;
      s << "job timed out after " << opts_.timeout_s << " s; killing " << live_rank_count()
        << " rank(s) (still running: " << live_rank_list() << ")";
      report(s.str());
      stop_job(kExitTimeout, SIGTERM);
    }
    if (kill_at_ && now >= *kill_at_) {
      if (live_rank_count() > 0)
        report("rank(s) " + live_rank_list() + " still running " + std::to_string(kKillGrace.count()) +
               " s after the stop signal; sending SIGKILL");
      signal_live_ranks(SIGKILL);
      kill_at_.reset();
    }
    if (!stopping_) {
      for (size_t r = 0; r < ranks_.size(); ++r) exited[r] = ranks_[r].reaped;
      if (auto why = server.deadlock(exited)) {
        report(*why + "; stopping the job");
        stop_job(kExitInternal, SIGTERM);
      }
    }

    // Sleep until an fd is ready or the nearest deadline.
    std::optional<Clock::time_point> wake;
    for (const auto& t : {stopping_ ? std::nullopt : deadline, kill_at_, drain_until})
      if (t && (!wake || *t < *wake)) wake = t;
    int timeout_ms = -1;
    if (wake) {
      const auto ms = std::chrono::ceil<std::chrono::milliseconds>(*wake - Clock::now()).count();
      timeout_ms = static_cast<int>(std::max<decltype(ms)>(0, std::min<decltype(ms)>(ms, 60000)));
    }

    fds.clear();
    fds.push_back(pollfd{g_signal_pipe[0], POLLIN, 0});
    const size_t server_begin = fds.size();
    server.add_pollfds(fds);
    const size_t out_begin = fds.size();
    out.add_pollfds(fds);
    if (::poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      report(std::string("poll: ") + std::strerror(errno));
      stop_job(kExitInternal, SIGKILL);
      continue;
    }
    if (fds[0].revents & POLLIN) {
      unsigned char sigs[64];
      ssize_t n;
      while ((n = ::read(g_signal_pipe[0], sigs, sizeof(sigs))) > 0)
        for (ssize_t i = 0; i < n; ++i) on_signal(sigs[i]);
    }
    const std::span<const pollfd> all(fds);
    server.handle(all.subspan(server_begin, out_begin - server_begin));
    out.handle(all.subspan(out_begin));
  }

  out.drain_and_close_all();
  if (const std::string refused = server.refusal_summary(); !refused.empty()) report(refused);
  if (opts_.verbose) report("job " + job_id_ + " done; exit status " + std::to_string(exit_code_));
  return exit_code_;
}

}  // namespace tsurun
