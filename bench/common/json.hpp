// JSON lines: a small writer for the benchmark records and a small reader so
// `tsu-bench summary` can compare figures written by separate runs.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// An object whose keys keep their insertion order.
class JsonObject {
 public:
  JsonObject& add(const std::string& key, const std::string& value);
  JsonObject& add(const std::string& key, const char* value);
  JsonObject& add(const std::string& key, double value);
  JsonObject& add(const std::string& key, int64_t value);
  JsonObject& add(const std::string& key, int value) { return add(key, int64_t{value}); }
  JsonObject& add(const std::string& key, uint64_t value);
  JsonObject& add(const std::string& key, bool value);
  JsonObject& add(const std::string& key, const JsonObject& value);
  std::string str() const;  // one line, no trailing newline

 private:
  std::vector<std::pair<std::string, std::string>> fields_;  // key, encoded value
};

std::string json_quote(const std::string& text);

// Appends one line per call; several runs may append to the same file.
class JsonLinesFile {
 public:
  explicit JsonLinesFile(std::string path) : path_(std::move(path)) {}
  bool enabled() const { return !path_.empty(); }
  // False (with a message on stderr) if the file cannot be written.
  bool append(const JsonObject& record) const;

 private:
  std::string path_;
};

// Parsed JSON value (what the reader needs: objects, arrays, scalars).
struct JsonValue {
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  Kind kind = Kind::kNull;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<JsonValue> items;
  std::map<std::string, JsonValue> members;

  const JsonValue* find(const std::string& key) const;
  std::string string_or(const std::string& key, const std::string& fallback) const;
  double number_or(const std::string& key, double fallback) const;
};

// Parses one document; nullopt on a syntax error.
std::optional<JsonValue> parse_json(const std::string& text);

// Every parsable line of a JSON lines file (bad lines are skipped with a note
// on stderr).  Empty when the file cannot be read.
std::vector<JsonValue> read_json_lines(const std::string& path);

}  // namespace bench
