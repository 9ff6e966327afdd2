#pragma once
// Input errors: each names the file, the JSON pointer and what was expected.
// All problems of one file are gathered and reported together.
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace plumb {

struct Diagnostic {
  std::string file;     // as the user named it
  std::string pointer;  // RFC 6901 JSON pointer; empty for the whole file
  std::string message;

  std::string to_string() const;  // "scenarios/x.json: /parallel/pp: 7 does not divide 61 layers"
};

// Bad input (exit code 2): one or more diagnostics.
class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<Diagnostic> diagnostics_;
};

class Diagnostics {
 public:
  void add(std::string file, std::string pointer, std::string message);
  bool empty() const { return list_.empty(); }
  std::size_t size() const { return list_.size(); }
  const std::vector<Diagnostic>& list() const { return list_; }
  // Throws InputError holding everything gathered so far, if anything was.
  void throw_if_any() const;

 private:
  std::vector<Diagnostic> list_;
};

// The shortest candidate `word` begins (a name cut short), else the candidate closest to `word` by edit
// distance, if it is close enough to be a plausible typo.
std::string nearest_word(std::string_view word, const std::vector<std::string>& candidates);

// "/parallel/pp" from {"parallel", "pp"}; escapes '~' and '/' as RFC 6901 requires.
std::string json_pointer_append(const std::string& base, std::string_view token);

}  // namespace plumb
