#pragma once
// A small command-line parser: options declared up front, so unknown options are errors with the
// nearest valid one suggested, and --help text is generated from the same declarations.
#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace plumb::cli {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct OptionSpec {
  std::string name;       // "--json"
  std::string value_name; // empty for a flag; "KEY=VALUE" for --set
  std::string help;
  bool repeatable = false;
};

struct CommandSpec {
  std::string name;   // "memory"
  std::string usage;  // "plumb memory SCENARIO [--json] [--set key=value ...]"
  std::string summary;
  std::vector<std::string> positionals;  // required positional names
  std::vector<OptionSpec> options;
};

class Args {
 public:
  // Throws UsageError; "--help" is recognised by the caller before parsing.
  Args(const CommandSpec& spec, const std::vector<std::string>& argv);
  bool flag(const std::string& name) const { return values_.count(name) > 0; }
  std::string value(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> values(const std::string& name) const;
  // Numeric options; a value that is not a number in [min, max] is a UsageError naming the option.
  double number(const std::string& name, double fallback, double min, double max) const;
  std::int64_t integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) const;
  const std::string& positional(std::size_t i) const { return positionals_.at(i); }
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

std::string help_text(const CommandSpec& spec);
bool wants_help(const std::vector<std::string>& argv);

// The value of `word` in `words`; otherwise a UsageError naming `option`, the choices and the nearest.
std::string unknown_word_message(const std::string& option, const std::string& word, const std::vector<std::string>& words);
template <class E>
E choose(const std::string& option, const std::string& word, const std::vector<std::pair<std::string, E>>& words) {
  std::vector<std::string> names;
  for (const auto& [name, value] : words) {
    if (name == word) return value;
    names.push_back(name);
  }
  throw UsageError(unknown_word_message(option, word, names));
}

}  // namespace plumb::cli
