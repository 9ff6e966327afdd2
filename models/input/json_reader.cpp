#include "models/input/json_reader.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <fstream>
#include <set>
#include <sstream>

namespace plumb {

void SourceFile::error(const std::string& pointer, std::string message) const {
  // A value that came from the command line is reported as such: the file never said it.
  for (const auto& [overridden, flag] : overrides) {
    if (pointer == overridden || pointer.starts_with(overridden + "/")) {
      message += fmt::format(" (from {})", flag);
      break;
    }
  }
  diagnostics->add(name, pointer, std::move(message));
}

namespace {

// Line and column (1-based) of a byte offset, for parse errors.
std::pair<std::size_t, std::size_t> line_column(const std::string& text, std::size_t offset) {
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return {line, column};
}

}  // namespace

std::optional<std::size_t> json_nesting_beyond(const std::string& text, int limit) {
  int depth = 0;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) escaped = false;
      else if (c == '\\') escaped = true;
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return i;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return std::nullopt;
}

Json parse_json_text(const std::string& text, const SourceFile& src) {
  // Nesting is refused before parsing, so a hostile file costs one pass over its bytes.
  if (std::optional<std::size_t> at = json_nesting_beyond(text, kMaxJsonNesting)) {
    auto [line, column] = line_column(text, *at);
    src.error("", fmt::format("JSON nested deeper than {} levels at line {}, column {}: plumb's inputs need a few; flatten it",
                              kMaxJsonNesting, line, column));
    return Json(Json::value_t::discarded);
  }
  // nlohmann keeps the last of duplicate keys silently; a strict reader reports them, at their pointer.
  struct Open {
    bool object;
    std::string pointer;
    std::set<std::string> keys;
    std::size_t next_index = 0;
  };
  std::vector<Open> open;
  std::vector<std::pair<std::string, std::string>> duplicates;  // (pointer of the object, key)
  std::string pending_key;
  auto child_pointer = [&]() {
    if (open.empty()) return std::string{};
    Open& top = open.back();
    return json_pointer_append(top.pointer, top.object ? pending_key : std::to_string(top.next_index++));
  };
  auto watch = [&](int, Json::parse_event_t event, Json& parsed) {
    switch (event) {
      case Json::parse_event_t::object_start:
      case Json::parse_event_t::array_start: {
        std::string pointer = child_pointer();
        open.push_back({event == Json::parse_event_t::object_start, pointer, {}, 0});
        break;
      }
      case Json::parse_event_t::object_end:
      case Json::parse_event_t::array_end:
        if (!open.empty()) open.pop_back();
        break;
      case Json::parse_event_t::key:
        pending_key = parsed.get<std::string>();
        if (!open.empty() && !open.back().keys.insert(pending_key).second)
          duplicates.emplace_back(open.back().pointer, pending_key);
        break;
      case Json::parse_event_t::value:
        if (!open.empty() && !open.back().object) ++open.back().next_index;
        break;
    }
    return true;
  };
  try {
    Json value = Json::parse(text, watch, /*allow_exceptions=*/true, /*ignore_comments=*/false);
    for (const auto& [pointer, key] : duplicates)
      src.error(pointer, fmt::format("key \"{}\" appears twice; keep one", key));
    return value;
  } catch (const Json::out_of_range& e) {
    // A number beyond a double ("1e320"): nlohmann names the token but not where it is.
    std::string what = e.what();
    const std::size_t open = what.find('\''), close = what.rfind('\'');
    const std::string token = open != std::string::npos && close > open ? what.substr(open + 1, close - open - 1) : std::string();
    const std::size_t at = token.empty() ? std::string::npos : text.find(token);
    auto [line, column] = line_column(text, at == std::string::npos ? 0 : at);
    src.error("", fmt::format("the number {} at line {}, column {} is beyond what plumb reads (at most about 1.8e308)", token, line, column));
    return Json(Json::value_t::discarded);
  } catch (const Json::parse_error& e) {
    auto [line, column] = line_column(text, e.byte == 0 ? 0 : e.byte - 1);
    std::string what = e.what();
    // nlohmann's message starts with "[json.exception.parse_error.101] parse error at line…: ".
    auto colon = what.find(": ", what.find("parse error"));
    std::string detail = colon == std::string::npos ? what : what.substr(colon + 2);
    src.error("", fmt::format("malformed JSON at line {}, column {}: {}", line, column, detail));
    return Json(Json::value_t::discarded);
  }
}

std::optional<std::string> read_input_text(const std::filesystem::path& path, const SourceFile& src) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    src.error("", "cannot read the file (does it exist?)");
    return std::nullopt;
  }
  // Read in pieces up to the limit, so that a device or an endless pipe costs no more than it.
  std::string text;
  std::vector<char> piece(1 << 20);
  while (in) {
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    text.append(piece.data(), static_cast<std::size_t>(in.gcount()));
    if (static_cast<double>(text.size()) > kMaxInputBytes) {
      src.error("", fmt::format("larger than the {:.0f} MiB plumb reads from one input file; is it the right file?", kMaxInputBytes / (1 << 20)));
      return std::nullopt;
    }
  }
  if (in.bad()) {
    src.error("", "cannot read the file (is it a folder?)");
    return std::nullopt;
  }
  return text;
}

Json load_json_file(const std::filesystem::path& path, const SourceFile& src) {
  std::optional<std::string> text = read_input_text(path, src);
  if (!text) return Json(Json::value_t::discarded);
  return parse_json_text(*text, src);
}

bool valid_utf8(std::string_view text, std::size_t* bad_at) {
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    std::size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    bool ok = n > 0 && i + n <= text.size() && !(n == 2 && c < 0xC2) && !(n == 4 && c > 0xF4);
    for (std::size_t k = 1; ok && k < n; ++k) ok = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    if (ok && n == 3) {
      const auto d = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xE0 && d < 0xA0) && !(c == 0xED && d >= 0xA0);  // overlong; UTF-16 surrogates
    }
    if (ok && n == 4) {
      const auto d = static_cast<unsigned char>(text[i + 1]);
      ok = !(c == 0xF0 && d < 0x90) && !(c == 0xF4 && d >= 0x90);  // overlong; beyond U+10FFFF
    }
    if (!ok) {
      if (bad_at) *bad_at = i;
      return false;
    }
    i += n;
  }
  return true;
}

std::string json_brief(const Json& value) {
  if (value.is_object()) return "{...}";
  if (value.is_array()) return "[...]";
  // Strings a reader built from raw bytes may hold bad UTF-8: shown with U+FFFD, never a throw.
  std::string text = value.dump(-1, ' ', false, Json::error_handler_t::replace);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

ObjectReader::ObjectReader(const Json& value, std::string pointer, const SourceFile& src)
    : pointer_(std::move(pointer)), src_(src) {
  if (value.is_object()) object_ = &value;
  else if (!value.is_discarded())
    src_.error(pointer_, fmt::format("expected an object {{...}}, found {}", json_brief(value)));
}

ObjectReader::~ObjectReader() { finish(); }

void ObjectReader::finish() {
  if (finished_ || !object_) return;
  finished_ = true;
  for (const auto& [key, _] : object_->items()) {
    if (std::find(known_.begin(), known_.end(), key) != known_.end()) continue;
    std::string hint = nearest_word(key, known_);
    std::string message = fmt::format("unknown key \"{}\"", key);
    if (!hint.empty()) message += fmt::format("; did you mean \"{}\"?", hint);
    else message += fmt::format("; valid keys here: {}", fmt::join(known_, ", "));
    src_.error(pointer(key), message);
  }
}

void ObjectReader::error(std::string_view key, std::string message) const {
  src_.error(pointer(key), std::move(message));
}

void ObjectReader::retired(std::string_view key, std::string_view replacement) {
  if (!object_ || !object_->contains(key)) return;
  known_.emplace_back(key);
  error(key, fmt::format("\"{}\" is no longer read: {}", key, replacement));
}

bool ObjectReader::has(std::string_view key) {
  if (std::find(known_.begin(), known_.end(), key) == known_.end()) known_.emplace_back(key);
  return object_ && object_->contains(key);
}

const Json* ObjectReader::lookup(std::string_view key, Need need) {
  if (!has(key)) {
    if (need == Need::required && object_) src_.error(pointer_, fmt::format("missing key \"{}\"", key));
    return nullptr;
  }
  const Json& value = (*object_)[std::string(key)];
  if (value.is_null()) {
    if (need == Need::required) error(key, "must not be null");
    return nullptr;
  }
  return &value;
}

const Json* ObjectReader::child(std::string_view key, Need need) { return lookup(key, need); }

std::optional<std::int64_t> ObjectReader::integer(std::string_view key, Need need, std::int64_t min,
                                                  std::int64_t max) {
  const Json* v = lookup(key, need);
  if (!v) return std::nullopt;
  bool integral = v->is_number_integer() ||
                  (v->is_number_float() && std::floor(v->get<double>()) == v->get<double>());
  if (!integral) {
    error(key, fmt::format("expected a whole number, found {}", json_brief(*v)));
    return std::nullopt;
  }
  double as_double = v->get<double>();
  if (as_double < static_cast<double>(min) || as_double > static_cast<double>(max)) {
    error(key, fmt::format("{} is out of range: must be between {} and {}", json_brief(*v), min, max));
    return std::nullopt;
  }
  return v->is_number_unsigned() ? static_cast<std::int64_t>(v->get<std::uint64_t>())
                                 : v->get<std::int64_t>();
}

std::optional<double> ObjectReader::number(std::string_view key, Need need, double min, double max) {
  const Json* v = lookup(key, need);
  if (!v) return std::nullopt;
  if (!v->is_number()) {
    error(key, fmt::format("expected a number, found {}", json_brief(*v)));
    return std::nullopt;
  }
  double x = v->get<double>();
  if (!(x >= min && x <= max)) {
    error(key, fmt::format("{} is out of range: must be between {} and {}", json_brief(*v), min, max));
    return std::nullopt;
  }
  return x;
}

std::optional<bool> ObjectReader::boolean(std::string_view key, Need need) {
  const Json* v = lookup(key, need);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) {
    error(key, fmt::format("expected true or false, found {}", json_brief(*v)));
    return std::nullopt;
  }
  return v->get<bool>();
}

std::optional<std::string> ObjectReader::string(std::string_view key, Need need) {
  const Json* v = lookup(key, need);
  if (!v) return std::nullopt;
  if (!v->is_string()) {
    error(key, fmt::format("expected a string, found {}", json_brief(*v)));
    return std::nullopt;
  }
  return v->get<std::string>();
}

std::optional<double> read_quantity(const Json& value, Dimension dim, const std::string& pointer,
                                    const SourceFile& src) {
  std::optional<double> result;
  if (value.is_number()) {
    if (dim == Dimension::count) result = value.get<double>();
    else {
      src.error(pointer, fmt::format("{} has no unit; write {} as a string such as {}", json_brief(value),
                                     dimension_name(dim), dimension_example(dim)));
      return std::nullopt;
    }
  } else if (value.is_string()) {
    std::string why;
    result = parse_quantity(value.get<std::string>(), dim, &why);
    if (!result) {
      src.error(pointer, why);
      return std::nullopt;
    }
  } else {
    src.error(pointer, fmt::format("expected {} such as {}, found {}", dimension_name(dim),
                                   dimension_example(dim), json_brief(value)));
    return std::nullopt;
  }
  if (!(*result > 0.0)) {
    src.error(pointer, fmt::format("{} must be greater than zero", json_brief(value)));
    return std::nullopt;
  }
  if (*result > 1e30) {
    src.error(pointer, fmt::format("{} is implausibly large", json_brief(value)));
    return std::nullopt;
  }
  return result;
}

std::optional<double> ObjectReader::quantity(std::string_view key, Dimension dim, Need need) {
  const Json* v = lookup(key, need);
  if (!v) return std::nullopt;
  return read_quantity(*v, dim, pointer(key), src_);
}

std::optional<std::size_t> ObjectReader::choice_index(std::string_view key, Need need,
                                                      const std::vector<std::string>& words) {
  std::optional<std::string> word = string(key, need);
  if (!word) return std::nullopt;
  for (std::size_t i = 0; i < words.size(); ++i)
    if (words[i] == *word) return i;
  std::string hint = nearest_word(*word, words);
  error(key, fmt::format("\"{}\" is not one of \"{}\"{}", *word, fmt::join(words, "\", \""),
                         hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint)));
  return std::nullopt;
}

}  // namespace plumb
