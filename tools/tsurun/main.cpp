// tsurun: starts N ranks of a program on this machine and serves the
// bootstrap they find each other through.  See docs/tsurun.md.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <algorithm>
#include <cstdlib>
#include <string>

#include "launcher.hpp"
#include "log.hpp"
#include "options.hpp"

int main(int argc, char** argv) {
  tsurun::Options opts;
  CLI::App app{"tsurun -n N [OPTIONS] [--] PROGRAM [ARGS...]\n"
               "Start N ranks of PROGRAM on this machine and serve their bootstrap.",
               "tsurun"};
  // Everything from the first positional on belongs to the program, so its
  // own options (e.g. `prog -n 5`) are not taken as ours.
  app.prefix_command();
  app.add_option("-n,--np", opts.nranks, "Number of ranks to start (>= 1)")
      ->required()
      ->check(CLI::Range(1u, 1u << 20));
  app.add_flag("-t,--tag-output", opts.tag_output, "Prefix each output line with \"[RANK] \"");
  app.add_option("--timeout", opts.timeout_s, "Kill the job after S seconds (fractions allowed)")
      ->type_name("S")
      ->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            char* end = nullptr;
            const double v = std::strtod(text.c_str(), &end);
            const bool ok = !text.empty() && *end == '\0' && v > 0 && v < 1e9;
            return ok ? "" : "'" + text + "' is not a positive number of seconds";
          },
          "POSITIVE"));
  app.add_option("--ranks-per-node", opts.ranks_per_node,
                 "Set TSU_NODE_ID=rank/K so ranks pose as nodes of K ranks")
      ->type_name("K")
      ->check(CLI::Range(1u, 1u << 20));
  app.add_flag("-v,--verbose", opts.verbose, "Log launch and bootstrap events to stderr");
  std::string hosts_text, placement = "block";
  app.add_option("--hosts", hosts_text,
                 "Comma-separated hosts to place ranks on; ranks on one host share memory "
                 "(TSU_NODE_ID=host), others talk udp; the bootstrap is served over TCP")
      ->type_name("H1,H2,...");
  app.add_option("--spawn", opts.spawn,
                 "Command prefix that starts a rank on {host}, e.g. 'ssh {host}' or "
                 "'ip netns exec {host}' (default: start locally)")
      ->type_name("TEMPLATE");
  app.add_option("--placement", placement, "block (default) or round-robin over --hosts")
      ->check(CLI::IsMember({"block", "round-robin"}));
  app.add_option("--bootstrap-addr", opts.bootstrap_addr,
                 "IP[:PORT] the TCP bootstrap listens on and ranks connect to (default: the "
                 "local address routing to the first host)")
      ->type_name("IP[:PORT]");
  app.add_flag("--tolerate-rank-loss", opts.tolerate_rank_loss,
               "A rank that dies is reported as lost and the others continue (their barriers "
               "no longer wait for it); the exit status is still the lost rank's");
  app.footer(
      "Exit status: 0 if every rank exited 0; else the first failing rank's exit code\n"
      "(128+N if killed by signal N); 124 on --timeout; 127 if PROGRAM cannot be executed;\n"
      "128+N when tsurun gets signal N (130 SIGINT, 143 SIGTERM); 2 on bad usage;\n"
      "1 when tsurun fails or the ranks deadlock in the bootstrap.");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    tsurun::report(std::string(e.what()) + " (try 'tsurun --help')");
    return tsurun::kExitUsage;
  }
  opts.round_robin = placement == "round-robin";
  for (std::size_t pos = 0; !hosts_text.empty() && pos <= hosts_text.size();) {
    const std::size_t comma = std::min(hosts_text.find(',', pos), hosts_text.size());
    if (comma > pos) opts.hosts.push_back(hosts_text.substr(pos, comma - pos));
    pos = comma + 1;
  }
  if (!opts.spawn.empty() && opts.spawn.find("{host}") == std::string::npos) {
    tsurun::report("--spawn template must contain {host} (try 'tsurun --help')");
    return tsurun::kExitUsage;
  }
  if (!opts.spawn.empty() && opts.hosts.empty()) {
    tsurun::report("--spawn needs --hosts (try 'tsurun --help')");
    return tsurun::kExitUsage;
  }
  opts.command = app.remaining();
  if (!opts.command.empty() && opts.command.front() == "--") opts.command.erase(opts.command.begin());
  if (opts.command.empty()) {
    tsurun::report("no program given (try 'tsurun --help')");
    return tsurun::kExitUsage;
  }
  std::fflush(stdout);  // nothing buffered may be duplicated into the ranks by fork
  return tsurun::Launcher(std::move(opts)).run();
}
