#include "validate/imports/toml_subset.hpp"

#include <fmt/format.h>
#include <sstream>

#include "models/input/diagnostics.hpp"

namespace plumb {

namespace {

std::string trim(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// The line without its comment (a # outside quotes).
std::string without_comment(const std::string& line) {
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (quote) {
      if (line[i] == quote) quote = 0;
    } else if (line[i] == '"' || line[i] == '\'') {
      quote = line[i];
    } else if (line[i] == '#') {
      return line.substr(0, i);
    }
  }
  return line;
}

struct ValueParser {
  const std::string& text;
  std::size_t at = 0;
  std::string error;

  void skip() {
    while (at < text.size() && (text[at] == ' ' || text[at] == '\t')) ++at;
  }
  std::optional<Json> value() {
    skip();
    if (at >= text.size()) return fail("a value is missing");
    const char c = text[at];
    if (c == '"' || c == '\'') {
      const std::size_t end = text.find(c, at + 1);
      if (end == std::string::npos) return fail("a string is not closed");
      Json s = text.substr(at + 1, end - at - 1);
      at = end + 1;
      return s;
    }
    if (c == '[') {
      ++at;
      Json a = Json::array();
      skip();
      if (at < text.size() && text[at] == ']') return ++at, a;
      while (true) {
        std::optional<Json> v = value();
        if (!v) return std::nullopt;
        a.push_back(*v);
        skip();
        if (at < text.size() && text[at] == ',') {
          ++at;
          skip();
          if (at < text.size() && text[at] == ']') return ++at, a;  // a trailing comma
          continue;
        }
        if (at < text.size() && text[at] == ']') return ++at, a;
        return fail("an array must close on its line with ]");
      }
    }
    std::size_t end = at;
    while (end < text.size() && text[end] != ',' && text[end] != ']' && text[end] != ' ' && text[end] != '\t') ++end;
    std::string word = text.substr(at, end - at);
    at = end;
    if (word == "true") return Json(true);
    if (word == "false") return Json(false);
    std::string digits;
    for (char ch : word)
      if (ch != '_') digits += ch;
    try {
      std::size_t used = 0;
      if (digits.find_first_of(".eE") == std::string::npos || digits.starts_with("0x")) {
        const long long v = std::stoll(digits, &used, 0);
        if (used == digits.size()) return Json(v);
      } else {
        const double v = std::stod(digits, &used);
        if (used == digits.size() && std::isfinite(v)) return Json(v);
      }
    } catch (const std::exception&) {
    }
    return fail(fmt::format("\"{}\" is not a string, a boolean, a number or an array", word));
  }
  std::optional<Json> fail(std::string message) {
    error = std::move(message);
    return std::nullopt;
  }
};

}  // namespace

Json parse_toml_subset(const std::string& text, const std::string& file) {
  Json doc = Json::object();
  Json* section = &doc;
  std::vector<Diagnostic> problems;
  std::istringstream in(text);
  std::string raw;
  for (std::size_t n = 1; std::getline(in, raw); ++n) {
    auto problem = [&](const std::string& message) { problems.push_back({file, fmt::format("line {}", n), message}); };
    if (std::size_t at = 0; !valid_utf8(raw, &at)) {  // TOML 1.0: a TOML file must be valid UTF-8
      problem(fmt::format("byte {} is not valid UTF-8 (TOML files are UTF-8)", at + 1));
      continue;
    }
    const std::string line = trim(without_comment(raw));
    if (line.empty()) continue;
    if (line.front() == '[') {
      if (line.size() < 3 || line.back() != ']' || line[1] == '[') {
        problem("a section header is [name] or [name.sub] (arrays of tables are not read)");
        continue;
      }
      section = &doc;
      std::istringstream names(line.substr(1, line.size() - 2));
      for (std::string name; std::getline(names, name, '.');) {
        name = trim(name);
        if (name.empty()) {
          problem("an empty name in the section header");
          break;
        }
        Json& child = (*section)[name];
        if (!child.is_null() && !child.is_object()) {
          problem(fmt::format("{} is a key and a section", name));
          break;
        }
        if (child.is_null()) child = Json::object();
        section = &child;
      }
      continue;
    }
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) {
      problem("expected key = value or a [section]");
      continue;
    }
    const std::string key = trim(line.substr(0, eq));
    ValueParser p{line, eq + 1, {}};
    std::optional<Json> v = p.value();
    p.skip();
    if (!v) problem(fmt::format("{}: {}", key, p.error));
    else if (p.at != line.size()) problem(fmt::format("{}: something follows the value", key));
    else if (key.empty()) problem("a key is missing before =");
    else if (section->contains(key)) problem(fmt::format("{} is given twice", key));
    else (*section)[key] = *v;
  }
  if (!problems.empty()) throw InputError(problems);
  return doc;
}

}  // namespace plumb
