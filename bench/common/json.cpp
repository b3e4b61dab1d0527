#include "json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>

namespace bench {

std::string json_quote(const std::string& text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

JsonObject& JsonObject::add(const std::string& key, const std::string& value) {
  fields_.emplace_back(key, json_quote(value));
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, const char* value) {
  return add(key, std::string(value));
}
JsonObject& JsonObject::add(const std::string& key, double value) {
  if (!std::isfinite(value)) {
    fields_.emplace_back(key, "null");
    return *this;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", value);
  fields_.emplace_back(key, buf);
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, int64_t value) {
  fields_.emplace_back(key, std::to_string(value));
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, uint64_t value) {
  fields_.emplace_back(key, std::to_string(value));
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, bool value) {
  fields_.emplace_back(key, value ? "true" : "false");
  return *this;
}
JsonObject& JsonObject::add(const std::string& key, const JsonObject& value) {
  fields_.emplace_back(key, value.str());
  return *this;
}

std::string JsonObject::str() const {
  std::string out = "{";
  for (std::size_t i = 0; i < fields_.size(); ++i) {
    if (i) out += ",";
    out += json_quote(fields_[i].first) + ":" + fields_[i].second;
  }
  return out + "}";
}

bool JsonLinesFile::append(const JsonObject& record) const {
  if (path_.empty()) return true;
  std::ofstream out(path_, std::ios::app);
  out << record.str() << '\n';
  if (!out) {
    std::cerr << "tsu-bench: cannot write " << path_ << "\n";
    return false;
  }
  return true;
}

// ---- reader -------------------------------------------------------------

namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  bool document(JsonValue& out) {
    if (!value(out)) return false;
    skip_space();
    return pos_ == s_.size();
  }

 private:
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' ||
                                s_[pos_] == '\r'))
      ++pos_;
  }
  bool literal(const char* word) {
    const std::string w(word);
    if (s_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }
  bool value(JsonValue& out) {
    skip_space();
    if (pos_ >= s_.size()) return false;
    const char c = s_[pos_];
    if (c == '{') return object(out);
    if (c == '[') return array(out);
    if (c == '"') {
      out.kind = JsonValue::Kind::kString;
      return string(out.text);
    }
    if (literal("true")) return out.kind = JsonValue::Kind::kBool, out.boolean = true, true;
    if (literal("false")) return out.kind = JsonValue::Kind::kBool, out.boolean = false, true;
    if (literal("null")) return out.kind = JsonValue::Kind::kNull, true;
    return number(out);
  }
  bool number(JsonValue& out) {
    const char* begin = s_.c_str() + pos_;
    char* end = nullptr;
    out.number = std::strtod(begin, &end);
    if (end == begin) return false;
    pos_ += static_cast<std::size_t>(end - begin);
    out.kind = JsonValue::Kind::kNumber;
    return true;
  }
  bool string(std::string& out) {
    ++pos_;  // opening quote
    while (pos_ < s_.size()) {
      const char c = s_[pos_++];
      if (c == '"') return true;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= s_.size()) return false;
      const char e = s_[pos_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (pos_ + 4 > s_.size()) return false;
          const long cp = std::strtol(s_.substr(pos_, 4).c_str(), nullptr, 16);
          pos_ += 4;
          out += cp < 0x80 ? static_cast<char>(cp) : '?';  // our writer emits ASCII only
          break;
        }
        default: out += e;
      }
    }
    return false;
  }
  bool array(JsonValue& out) {
    out.kind = JsonValue::Kind::kArray;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == ']') return ++pos_, true;
    for (;;) {
      JsonValue item;
      if (!value(item)) return false;
      out.items.push_back(std::move(item));
      skip_space();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == ']') return ++pos_, true;
      return false;
    }
  }
  bool object(JsonValue& out) {
    out.kind = JsonValue::Kind::kObject;
    ++pos_;
    skip_space();
    if (pos_ < s_.size() && s_[pos_] == '}') return ++pos_, true;
    for (;;) {
      skip_space();
      std::string key;
      if (pos_ >= s_.size() || s_[pos_] != '"' || !string(key)) return false;
      skip_space();
      if (pos_ >= s_.size() || s_[pos_] != ':') return false;
      ++pos_;
      JsonValue member;
      if (!value(member)) return false;
      out.members[key] = std::move(member);
      skip_space();
      if (pos_ >= s_.size()) return false;
      if (s_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (s_[pos_] == '}') return ++pos_, true;
      return false;
    }
  }

  const std::string& s_;
  std::size_t pos_ = 0;
};

}  // namespace

const JsonValue* JsonValue::find(const std::string& key) const {
  const auto it = members.find(key);
  return it == members.end() ? nullptr : &it->second;
}

std::string JsonValue::string_or(const std::string& key, const std::string& fallback) const {
  const JsonValue* v = find(key);
  return v && v->kind == Kind::kString ? v->text : fallback;
}

double JsonValue::number_or(const std::string& key, double fallback) const {
  const JsonValue* v = find(key);
  return v && v->kind == Kind::kNumber ? v->number : fallback;
}

std::optional<JsonValue> parse_json(const std::string& text) {
  JsonValue v;
  Parser p(text);
  if (!p.document(v)) return std::nullopt;
  return v;
}

std::vector<JsonValue> read_json_lines(const std::string& path) {
  std::vector<JsonValue> out;
  std::ifstream in(path);
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (auto v = parse_json(line)) out.push_back(std::move(*v));
    else std::cerr << "tsu-bench: " << path << ":" << number << ": not JSON, skipped\n";
  }
  return out;
}

}  // namespace bench
