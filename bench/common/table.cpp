#include "table.hpp"

#include <cstdio>

namespace bench {

namespace {
std::string pad(const std::string& text, int width, bool right) {
  const int fill = width - static_cast<int>(text.size());
  if (fill <= 0) return text;
  return right ? std::string(static_cast<std::size_t>(fill), ' ') + text
               : text + std::string(static_cast<std::size_t>(fill), ' ');
}
}  // namespace

void TablePrinter::header() const {
  std::string titles = "|", rule = "|";
  for (const Column& c : columns_) {
    titles += " " + pad(c.title, c.width, false) + " |";
    const auto dashes = static_cast<std::size_t>(c.width > 3 ? c.width : 3);
    rule += c.right_aligned ? " " + std::string(dashes - 1, '-') + ": |"
                            : " " + std::string(dashes, '-') + " |";
  }
  std::printf("%s\n%s\n", titles.c_str(), rule.c_str());
  std::fflush(stdout);
}

void TablePrinter::row(const std::vector<std::string>& cells) const {
  std::string line = "|";
  for (std::size_t i = 0; i < columns_.size(); ++i) {
    const std::string cell = i < cells.size() ? cells[i] : "";
    line += " " + pad(cell, columns_[i].width, columns_[i].right_aligned) + " |";
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
}

}  // namespace bench
