// Tables on stdout, printed row by row as points finish (so a long run shows
// progress) in Markdown pipe syntax (so they paste into docs unchanged).
#pragma once

#include <string>
#include <vector>

namespace bench {

class TablePrinter {
 public:
  struct Column {
    std::string title;
    int width;  // minimum; longer cells widen only their own row
    bool right_aligned = true;
  };
  explicit TablePrinter(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void header() const;  // title row and separator row
  void row(const std::vector<std::string>& cells) const;

 private:
  std::vector<Column> columns_;
};

}  // namespace bench
