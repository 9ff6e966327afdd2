#pragma once
// Strict reading of plumb's JSON inputs. Every key a reader asks about becomes "known"; keys the
// file has that nobody asked about are errors with the nearest known key suggested. Problems are
// gathered in Diagnostics so that a file's errors are reported together.
#include <cstdint>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/input/diagnostics.hpp"
#include "models/input/units.hpp"

namespace plumb {

using Json = nlohmann::json;

// One input document: its display name, its folder (relative references resolve against it),
// where its errors go, and which pointers a command-line --set replaced (errors there say so).
struct SourceFile {
  std::string name;
  std::filesystem::path dir;
  Diagnostics* diagnostics = nullptr;
  std::map<std::string, std::string> overrides;  // pointer → "--set parallel.pp=7"

  void error(const std::string& pointer, std::string message) const;
};

// The whole of an input file, at most kMaxInputBytes; an unreadable or larger file is a diagnostic.
inline constexpr double kMaxInputBytes = 256.0 * (1 << 20);
std::optional<std::string> read_input_text(const std::filesystem::path& path, const SourceFile& src);

// Reads and parses a JSON file; malformed JSON, duplicate keys and unreadable files become
// diagnostics, and the result is then a discarded value.
Json load_json_file(const std::filesystem::path& path, const SourceFile& src);
Json parse_json_text(const std::string& text, const SourceFile& src);
// Arrays and objects nest at most this deep in any input (plumb's own formats use fewer than ten).
inline constexpr int kMaxJsonNesting = 256;
// The byte offset where `text` first opens its (limit + 1)-th level of nesting, outside strings; none
// when it stays within `limit`.
std::optional<std::size_t> json_nesting_beyond(const std::string& text, int limit);

enum class Need { required, optional };

class ObjectReader {
 public:
  ObjectReader(const Json& value, std::string pointer, const SourceFile& src);
  ObjectReader(const ObjectReader&) = delete;
  ObjectReader& operator=(const ObjectReader&) = delete;
  ~ObjectReader();

  bool is_object() const { return object_ != nullptr; }
  const SourceFile& source() const { return src_; }
  const std::string& pointer() const { return pointer_; }
  std::string pointer(std::string_view key) const { return json_pointer_append(pointer_, key); }

  bool has(std::string_view key);
  const Json* child(std::string_view key, Need need);
  // A key plumb no longer reads: where the object holds it, an error saying what replaced it (and no
  // unknown-key error besides); otherwise nothing, and the key stays out of the valid keys listed.
  void retired(std::string_view key, std::string_view replacement);

  std::optional<std::int64_t> integer(std::string_view key, Need need, std::int64_t min,
                                      std::int64_t max);
  std::optional<double> number(std::string_view key, Need need, double min, double max);
  std::optional<bool> boolean(std::string_view key, Need need);
  std::optional<std::string> string(std::string_view key, Need need);
  // A value with an explicit unit ("80GiB"); counts also accept plain numbers. Must be > 0.
  std::optional<double> quantity(std::string_view key, Dimension dim, Need need);

  // One of a fixed set of words; an unknown word is an error naming the choices.
  template <class E>
  std::optional<E> choice(std::string_view key, Need need,
                          const std::vector<std::pair<std::string, E>>& options) {
    std::vector<std::string> words;
    for (const auto& [word, _] : options) words.push_back(word);
    std::optional<std::size_t> index = choice_index(key, need, words);
    if (!index) return std::nullopt;
    return options[*index].second;
  }

  void error(std::string_view key, std::string message) const;
  // Reports unknown keys now (the destructor does it otherwise).
  void finish();

 private:
  std::optional<std::size_t> choice_index(std::string_view key, Need need,
                                          const std::vector<std::string>& words);
  const Json* lookup(std::string_view key, Need need);

  const Json* object_ = nullptr;
  std::string pointer_;
  const SourceFile& src_;
  std::vector<std::string> known_;
  bool finished_ = false;
};

// A quantity held by any JSON value (used for array elements); errors go to `src` at `pointer`.
std::optional<double> read_quantity(const Json& value, Dimension dim, const std::string& pointer,
                                    const SourceFile& src);

// Whether `text` is well-formed UTF-8 (no truncated, overlong or surrogate sequences): what JSON
// strings must hold. Readers that build JSON from raw bytes (TOML, argument lists) check it first;
// the offset of the first bad byte in `bad_at`.
bool valid_utf8(std::string_view text, std::size_t* bad_at = nullptr);
// A short rendering of a JSON value for messages: 7, "fp8", {...}.
std::string json_brief(const Json& value);

}  // namespace plumb
