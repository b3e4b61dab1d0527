#include "transport/udp/impair.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace tsu::transport::udp {

namespace {
bool parse_time(const std::string& v, uint64_t& ns) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || x < 0) return false;
  const std::string unit(end);
  double mult = 1e6;  // default: ms
  if (unit == "ns") mult = 1;
  else if (unit == "us") mult = 1e3;
  else if (unit == "ms" || unit.empty()) mult = 1e6;
  else if (unit == "s") mult = 1e9;
  else return false;
  ns = static_cast<uint64_t>(x * mult);
  return true;
}
}  // namespace

bool parse_impair_spec(const std::string& spec, ImpairConfig& out, std::string& error) {
  ImpairConfig c;
  std::stringstream ss(spec);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const auto eq = item.find('=');
    if (eq == std::string::npos) {
      error = "impairment item '" + item + "' is not key=value";
      return false;
    }
    const std::string k = item.substr(0, eq), v = item.substr(eq + 1);
    char* end = nullptr;
    if (k == "loss" || k == "reorder" || k == "dup" || k == "corrupt") {
      const double p = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end || p < 0 || p > 100) {
        error = "impairment " + k + "='" + v + "' is not a percentage 0..100";
        return false;
      }
      (k == "loss" ? c.loss : k == "reorder" ? c.reorder : k == "dup" ? c.dup : c.corrupt) = p;
    } else if (k == "delay" || k == "jitter") {
      if (!parse_time(v, k == "delay" ? c.delay_ns : c.jitter_ns)) {
        error = "impairment " + k + "='" + v + "' is not a time (e.g. 2ms)";
        return false;
      }
    } else if (k == "seed") {
      c.seed = std::strtoull(v.c_str(), &end, 10);
      if (end == v.c_str() || *end) {
        error = "impairment seed='" + v + "' is not a number";
        return false;
      }
    } else {
      error = "unknown impairment key '" + k + "' (loss, reorder, dup, corrupt, delay, jitter, seed)";
      return false;
    }
  }
  out = c;
  return true;
}

void ImpairStage::emit(const std::byte* data, std::size_t len, const sockaddr_in& to,
                       uint64_t now, std::vector<Out>& now_out) {
  uint64_t d = cfg_.delay_ns;
  if (cfg_.jitter_ns) {
    const double j = (uni_(rng_) * 2.0 - 1.0) * static_cast<double>(cfg_.jitter_ns);
    d = static_cast<uint64_t>(std::max(0.0, static_cast<double>(d) + j));
  }
  if (chance(cfg_.reorder)) {
    ++reordered;
    d += std::max<uint64_t>(3 * cfg_.delay_ns, 200'000);
  }
  const bool corrupt = chance(cfg_.corrupt);
  if (d == 0 && !corrupt) {
    now_out.push_back(Out{data, len, to});
    return;
  }
  std::vector<std::byte> copy(data, data + len);
  if (corrupt && len) {
    ++corrupted;
    const std::size_t at = static_cast<std::size_t>(uni_(rng_) * static_cast<double>(len)) % len;
    copy[at] ^= std::byte{static_cast<unsigned char>(1u << (rng_() % 8))};
  }
  if (d == 0) {
    sent_.push_back(std::move(copy));
    now_out.push_back(Out{sent_.back().data(), len, to});
    return;
  }
  ++delayed;
  held_.push(Held{now + d, order_++, std::move(copy), to});
}

void ImpairStage::submit(const std::byte* data, std::size_t len, const sockaddr_in& to,
                         uint64_t now, std::vector<Out>& now_out) {
  if (chance(cfg_.loss)) {
    ++dropped;
    return;
  }
  emit(data, len, to, now, now_out);
  if (chance(cfg_.dup)) {
    ++duplicated;
    emit(data, len, to, now, now_out);
  }
}

void ImpairStage::release(uint64_t now, std::vector<Out>& now_out) {
  while (!held_.empty() && held_.top().due <= now) {
    // priority_queue::top is const: move out through a cast-free copy.
    Held h = std::move(const_cast<Held&>(held_.top()));
    held_.pop();
    sent_.push_back(std::move(h.bytes));
    now_out.push_back(Out{sent_.back().data(), sent_.back().size(), h.to});
  }
}

uint64_t ImpairStage::next_due(uint64_t now) const noexcept {
  if (held_.empty()) return UINT64_MAX;
  return held_.top().due > now ? held_.top().due - now : 0;
}

}  // namespace tsu::transport::udp
