// Option values shared by the subcommands, and parsers for the list syntax
// used on the command line ("1,2,4", "8", "1-4M", "8-64M:4", "get,put").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace bench {

struct CommonOptions {
  int reps = 5;              // repetitions per point (median/min/max over them)
  double duration_ms = 50;   // measuring time of one repetition
  bool quick = false;        // smoke-test sizes and times
  bool pin = false;          // pin worker threads to cores round-robin
  bool pin_ranks = false;    // pin each rank (and its progress thread) to CPU rank % n
  std::string json_path;     // JSON lines appended here when set
};

// "4096", "4K", "64M", "1G" (binary multiples).  nullopt on bad input.
std::optional<std::size_t> parse_size(const std::string& text);

// Comma-separated items; each is a size or a range "LO-HI[:FACTOR]" that
// expands to LO, LO*F, ... and always ends with HI (factor 2 by default).
std::optional<std::vector<std::size_t>> parse_size_list(const std::string& text);

// Comma-separated positive integers.
std::optional<std::vector<int>> parse_int_list(const std::string& text);

// Comma-separated words, each of which must be in `allowed`.
std::optional<std::vector<std::string>> parse_word_list(const std::string& text,
                                                        const std::vector<std::string>& allowed);

// "4 KiB", "64 MiB", "8 B": sizes as humans read them in tables.
std::string format_size(std::size_t bytes);

}  // namespace bench
