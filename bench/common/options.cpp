#include "options.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace bench {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

std::optional<unsigned long long> parse_unsigned(const std::string& text, std::size_t& used) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  used = static_cast<std::size_t>(end - text.c_str());
  return v;
}

}  // namespace

std::optional<std::size_t> parse_size(const std::string& text) {
  std::size_t used = 0;
  const auto v = parse_unsigned(text, used);
  if (!v) return std::nullopt;
  std::string suffix = text.substr(used);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  unsigned shift = 0;
  if (suffix.empty() || suffix == "B") shift = 0;
  else if (suffix == "K" || suffix == "KB" || suffix == "KIB") shift = 10;
  else if (suffix == "M" || suffix == "MB" || suffix == "MIB") shift = 20;
  else if (suffix == "G" || suffix == "GB" || suffix == "GIB") shift = 30;
  else return std::nullopt;
  return static_cast<std::size_t>(*v << shift);
}

std::optional<std::vector<std::size_t>> parse_size_list(const std::string& text) {
  std::vector<std::size_t> out;
  for (const std::string& item : split(text, ',')) {
    const auto dash = item.find('-');
    if (dash == std::string::npos) {
      const auto s = parse_size(item);
      if (!s) return std::nullopt;
      out.push_back(*s);
      continue;
    }
    std::string hi_text = item.substr(dash + 1);
    std::size_t factor = 2;
    if (const auto colon = hi_text.find(':'); colon != std::string::npos) {
      const auto f = parse_size(hi_text.substr(colon + 1));
      if (!f || *f < 2) return std::nullopt;
      factor = *f;
      hi_text.resize(colon);
    }
    const auto lo = parse_size(item.substr(0, dash));
    const auto hi = parse_size(hi_text);
    if (!lo || !hi || *lo == 0 || *lo > *hi) return std::nullopt;
    for (std::size_t s = *lo; s < *hi; s *= factor) out.push_back(s);
    out.push_back(*hi);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<std::vector<int>> parse_int_list(const std::string& text) {
  std::vector<int> out;
  for (const std::string& item : split(text, ',')) {
    std::size_t used = 0;
    const auto v = parse_unsigned(item, used);
    if (!v || used != item.size() || *v == 0 || *v > 1024) return std::nullopt;
    out.push_back(static_cast<int>(*v));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<std::vector<std::string>> parse_word_list(const std::string& text,
                                                        const std::vector<std::string>& allowed) {
  std::vector<std::string> out = split(text, ',');
  if (out.empty()) return std::nullopt;
  for (const auto& w : out)
    if (std::find(allowed.begin(), allowed.end(), w) == allowed.end()) return std::nullopt;
  return out;
}

std::string format_size(std::size_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB"};
  int u = 0;
  while (u < 3 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++u;
  }
  return std::to_string(bytes) + " " + units[u];
}

}  // namespace bench
