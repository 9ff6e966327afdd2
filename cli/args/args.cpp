#include "cli/args/args.hpp"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/input/diagnostics.hpp"

namespace plumb::cli {

Args::Args(const CommandSpec& spec, const std::vector<std::string>& argv) {
  std::vector<std::string> names;
  for (const OptionSpec& o : spec.options) names.push_back(o.name);
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    // Long options, and short ones ("-o") where the command declares them.
    const bool short_option = arg.size() == 2 && arg[0] == '-' && std::find(names.begin(), names.end(), arg) != names.end();
    if (!arg.starts_with("--") && !short_option) {
      positionals_.push_back(arg);
      continue;
    }
    std::string name = arg, inline_value;
    bool has_inline = false;
    if (auto eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
      has_inline = true;
    }
    auto it = std::find_if(spec.options.begin(), spec.options.end(), [&](const OptionSpec& o) { return o.name == name; });
    if (it == spec.options.end()) {
      std::string hint = nearest_word(name, names);
      throw UsageError(fmt::format("unknown option {}{}", name, hint.empty() ? "" : fmt::format("; did you mean {}?", hint)));
    }
    if (it->value_name.empty()) {
      if (has_inline) throw UsageError(fmt::format("{} takes no value", name));
      values_[name].push_back("");
      continue;
    }
    std::string value = inline_value;
    if (!has_inline) {
      if (i + 1 >= argv.size()) throw UsageError(fmt::format("{} needs a value ({})", name, it->value_name));
      value = argv[++i];
    }
    if (!it->repeatable && values_.count(name)) throw UsageError(fmt::format("{} given twice", name));
    values_[name].push_back(value);
  }
  // A last positional named "NAME..." takes one or more arguments, "[NAME...]" zero or more; any
  // "[NAME]" may be left out (the command tells which were given by their count).
  const bool variadic = !spec.positionals.empty() && (spec.positionals.back().ends_with("...") || spec.positionals.back().ends_with("...]"));
  const auto least = static_cast<std::size_t>(
      std::count_if(spec.positionals.begin(), spec.positionals.end(), [](const std::string& p) { return p.front() != '['; }));
  if (positionals_.size() < least || (!variadic && positionals_.size() > spec.positionals.size())) {
    std::string expected;
    for (const std::string& p : spec.positionals) expected += " " + p;
    throw UsageError(fmt::format("expected{} but got {} argument{}", expected.empty() ? " no arguments" : expected,
                                 positionals_.size(), positionals_.size() == 1 ? "" : "s"));
  }
}

std::string Args::value(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> Args::values(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

double Args::number(const std::string& name, double fallback, double min, double max) const {
  if (!flag(name)) return fallback;
  std::string text = value(name);
  std::size_t used = 0;
  double x = 0;
  try {
    x = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size()) throw UsageError(fmt::format("{} needs a number, got \"{}\"", name, text));
  if (!(x >= min && x <= max)) throw UsageError(fmt::format("{} {} is out of range ({} to {})", name, text, min, max));
  return x;
}

std::int64_t Args::integer(const std::string& name, std::int64_t fallback, std::int64_t min, std::int64_t max) const {
  if (!flag(name)) return fallback;
  double x = number(name, 0, static_cast<double>(min), static_cast<double>(max));
  if (x != std::floor(x)) throw UsageError(fmt::format("{} needs a whole number, got {}", name, value(name)));
  return static_cast<std::int64_t>(x);
}

std::string help_text(const CommandSpec& spec) {
  std::string text = fmt::format("usage: {}\n\n{}\n", spec.usage, spec.summary);
  if (!spec.options.empty()) text += "\noptions:\n";
  for (const OptionSpec& o : spec.options) {
    std::string left = o.value_name.empty() ? o.name : o.name + " " + o.value_name;
    text += fmt::format("  {:<22} {}\n", left, o.help);
  }
  text += fmt::format("  {:<22} {}\n", "--help", "show this help");
  return text;
}

std::string unknown_word_message(const std::string& option, const std::string& word, const std::vector<std::string>& words) {
  std::string hint = nearest_word(word, words);
  return fmt::format("{} \"{}\" is not one of {}{}", option, word, fmt::join(words, ", "),
                     hint.empty() ? "" : fmt::format(" (did you mean \"{}\"?)", hint));
}

bool wants_help(const std::vector<std::string>& argv) {
  return std::find_if(argv.begin(), argv.end(), [](const std::string& a) { return a == "--help" || a == "-h"; }) !=
         argv.end();
}

}  // namespace plumb::cli
