#include "models/input/diagnostics.hpp"

#include <algorithm>
#include <numeric>

namespace plumb {
namespace {

std::string join(const std::vector<Diagnostic>& list) {
  std::string text;
  for (const Diagnostic& d : list) {
    if (!text.empty()) text += '\n';
    text += d.to_string();
  }
  return text;
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  std::iota(row.begin(), row.end(), std::size_t{0});
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string Diagnostic::to_string() const {
  std::string text = file;
  if (!pointer.empty()) text += ": " + pointer;
  return text + ": " + message;
}

InputError::InputError(std::vector<Diagnostic> diagnostics)
    : std::runtime_error(join(diagnostics)), diagnostics_(std::move(diagnostics)) {}

void Diagnostics::add(std::string file, std::string pointer, std::string message) {
  list_.push_back({std::move(file), std::move(pointer), std::move(message)});
}

void Diagnostics::throw_if_any() const {
  if (!list_.empty()) throw InputError(list_);
}

std::string nearest_word(std::string_view word, const std::vector<std::string>& candidates) {
  // A name cut short ("deepseek-v4" for "deepseek-v4-pro") is nearer than any typo: the shortest
  // candidate it begins.
  std::string completion;
  if (word.size() >= 3)
    for (const std::string& c : candidates)
      if (c.size() > word.size() && c.starts_with(word) && (completion.empty() || c.size() < completion.size())) completion = c;
  if (!completion.empty()) return completion;
  std::string best;
  std::size_t best_distance = std::string::npos;
  for (const std::string& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  // A typo changes a few characters; beyond a third of the word it is a different word.
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_distance <= limit ? best : std::string{};
}

std::string json_pointer_append(const std::string& base, std::string_view token) {
  std::string out = base + "/";
  for (char c : token) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out += c;
  }
  return out;
}

}  // namespace plumb
