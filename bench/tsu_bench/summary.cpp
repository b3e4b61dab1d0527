// tsu-bench summary: each headline tsunagi figure next to the physical limit
// measured in the same run (the JSON lines of `limits`, `rma` and `bw`), with
// the project's targets.  Informational: the exit status never depends on a
// timing, only on whether the input could be read.
#include <cmath>
#include <cstdio>
#include <functional>
#include <iostream>
#include <optional>

#include "../common/json.hpp"
#include "../common/report.hpp"
#include "../common/table.hpp"
#include "subcommands.hpp"

namespace bench {

namespace {

struct Query {
  std::string benchmark, metric, op, mode, transport;
  double size = -1;  // -1: any
  int threads = 1;
};

// The last matching record: later runs appended to the same file win.
const JsonValue* find_record(const std::vector<JsonValue>& records, const Query& q) {
  const JsonValue* found = nullptr;
  for (const JsonValue& r : records) {
    if (r.string_or("benchmark", "") != q.benchmark || r.string_or("metric", "") != q.metric ||
        r.string_or("op", "") != q.op)
      continue;
    if (!q.mode.empty() && r.string_or("mode", "") != q.mode) continue;
    if (!q.transport.empty() && r.string_or("transport", "") != q.transport) continue;
    if (q.size >= 0 && r.number_or("size", -2) != q.size) continue;
    if (r.number_or("threads", -1) != q.threads) continue;
    found = &r;
  }
  return found;
}

std::optional<double> median_of(const std::vector<JsonValue>& records, const Query& q) {
  const JsonValue* r = find_record(records, q);
  if (!r) return std::nullopt;
  return r->number_or("median", std::nan(""));
}

// The largest size for which both a bw record and a memcpy record exist.
std::optional<double> largest_common_size(const std::vector<JsonValue>& records,
                                          const std::string& mode) {
  std::optional<double> best;
  for (const JsonValue& r : records) {
    if (r.string_or("benchmark", "") != "bw" || r.string_or("op", "") != "put" ||
        r.string_or("mode", "") != mode || r.number_or("threads", 0) != 1)
      continue;
    const double size = r.number_or("size", 0);
    if (!find_record(records, {"limits", "memcpy_bandwidth", "memcpy", "none", "", size, 1}))
      continue;
    if (!best || size > *best) best = size;
  }
  return best;
}

std::string cell(std::optional<double> v, const char* unit) {
  return v ? format_value(*v) + " " + unit : "n/a";
}

}  // namespace

int run_summary(const SummaryOptions& opts) {
  const std::vector<JsonValue> records = read_json_lines(opts.input);
  if (records.empty()) {
    std::cerr << "tsu-bench summary: no records in " << opts.input << "\n";
    return 1;
  }
  std::printf("\n## summary: tsunagi vs physical limits (%s)\n\n", opts.input.c_str());
  const TablePrinter table({{"figure", 52, false},
                            {"tsunagi", 14},
                            {"limit", 14},
                            {"ratio", 7},
                            {"target", 22, false},
                            {"verdict", 7, false}});
  table.header();
  auto verdict = [](std::optional<double> value, const std::function<bool(double)>& pass) {
    return value ? (pass(*value) ? "PASS" : "MISS") : "n/a";
  };
  auto ratio = [](std::optional<double> a, std::optional<double> b) -> std::optional<double> {
    if (!a || !b || *b == 0) return std::nullopt;
    return *a / *b;
  };

  // 1. Bypass get latency vs one cache-line round trip between processes.
  {
    auto rtt = median_of(records, {"limits", "line_round_trip", "ping-pong", "none", "processes", 64, 2});
    const char* rtt_name = "processes";
    if (!rtt) {
      rtt = median_of(records, {"limits", "line_round_trip", "ping-pong", "none", "threads", 64, 2});
      rtt_name = "threads";
    }
    const auto lat = median_of(records, {"rma", "latency", "get", "bypass", "", 8, 1});
    const auto r = ratio(lat, rtt);
    table.row({std::string("bypass get 8 B latency / line round trip (") + rtt_name + ")",
               cell(lat, "ns"), cell(rtt, "ns"), r ? format_value(*r) : "n/a", "ratio <= 2",
               verdict(r, [](double x) { return x <= 2.0; })});
  }
  // 2. Engine overhead per call vs one uncontended CPU atomic (a ring push
  //    needs at least one atomic read-modify-write).
  {
    const auto atomic = median_of(records, {"limits", "atomic_fadd", "fadd", "none", "threads", 8, 1});
    for (const char* op : {"put", "get", "fadd"}) {
      const auto ovh = median_of(records, {"rma", "overhead", op, "engine", "", 8, 1});
      const auto r = ratio(ovh, atomic);
      table.row({std::string("engine ") + op + " 8 B overhead / CPU fetch-add", cell(ovh, "ns"),
                 cell(atomic, "ns"), r ? format_value(*r) : "n/a", "overhead < 100 ns",
                 verdict(ovh, [](double x) { return x < 100.0; })});
    }
  }
  // 3. Bypass 8-byte put rate from one thread vs 8-byte memcpy calls per second.
  {
    const auto rate = median_of(records, {"rma", "rate", "put", "bypass", "", 8, 1});
    const auto copy_gbps =
        median_of(records, {"limits", "memcpy_bandwidth", "memcpy", "none", "", 8, 1});
    std::optional<double> copy_rate;
    if (copy_gbps) copy_rate = *copy_gbps * 1e9 / 8 / 1e6;
    const auto r = ratio(rate, copy_rate);
    table.row({"bypass put 8 B rate, 1 thread / 8 B memcpy rate", cell(rate, "M/s"),
               cell(copy_rate, "M/s"), r ? format_value(*r) : "n/a", "rate > 20 M/s",
               verdict(rate, [](double x) { return x > 20.0; })});
  }
  // 4. Large put bandwidth vs memcpy of the same size.
  for (const char* mode : {"bypass", "engine"}) {
    const auto size = largest_common_size(records, mode);
    std::optional<double> bw, copy;
    if (size) {
      bw = median_of(records, {"bw", "bandwidth", "put", mode, "", *size, 1});
      copy = median_of(records, {"limits", "memcpy_bandwidth", "memcpy", "none", "", *size, 1});
    }
    const auto r = ratio(bw, copy);
    const std::string size_text = size ? format_size(static_cast<std::size_t>(*size)) : "?";
    table.row({std::string(mode) + " put " + size_text + " bandwidth / memcpy", cell(bw, "GB/s"),
               cell(copy, "GB/s"), r ? format_value(*r) : "n/a", "ratio >= 0.8",
               verdict(r, [](double x) { return x >= 0.8; })});
  }
  std::printf("\nPASS/MISS are informational: timings never fail the benchmark.\n");
  return 0;
}

}  // namespace bench
