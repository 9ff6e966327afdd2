// The plumb executable: dispatches subcommands and maps errors to exit codes
// (0 ok, 2 bad input, 3 infeasible, 70 internal). No modelling happens here.
#include <csignal>
#include <exception>
#include <fmt/format.h>
#include <iostream>
#include <string>
#include <unistd.h>
#include <vector>

#include "cli/commands.hpp"
#include "models/input/diagnostics.hpp"
#include "sim/time.hpp"

#ifndef PLUMB_VERSION
#define PLUMB_VERSION "unknown"
#endif

namespace {

using plumb::cli::Command;

const std::vector<const Command*>& commands() {
  static const std::vector<const Command*> list{&plumb::cli::run_command(), &plumb::cli::plan_command(), &plumb::cli::merge_command(),
                                                &plumb::cli::memory_command(), &plumb::cli::schedule_command(),
                                                &plumb::cli::collective_command(), &plumb::cli::ops_command(), &plumb::cli::calibrate_command(),
                                                &plumb::cli::compare_command(), &plumb::cli::validate_command(),
                                                &plumb::cli::trace_command(), &plumb::cli::import_command()};
  return list;
}

std::string top_help() {
  std::string text =
      "usage: plumb <command> [options]\n\n"
      "plumb predicts how a large-model training job behaves on a GPU cluster: one training step simulated\n"
      "(run), the best layout, GPU and fabric searched (plan, merge), memory per stage, pipeline schedules,\n"
      "collectives over the topology, the ops of each layer, profiles fitted to measurements (calibrate),\n"
      "and predictions set beside a real run on a GPU (compare).\n\ncommands:\n";
  for (const Command* c : commands())  // first usage line only; `plumb <command> --help` has the rest
    text += fmt::format("  {:<10} {}\n", c->spec.name, c->spec.usage.substr(0, c->spec.usage.find('\n')));
  text += "\noptions:\n  --help     show this help (also after a command)\n  --version  print the version\n";
  text += "\nplumb help --markdown prints every command's help as Markdown (docs/commands.md).\n";
  text += "\nexit codes: 0 ok, 2 bad input, 3 infeasible (e.g. does not fit), 70 internal error, 130 interrupted (Ctrl-C)\n";
  return text;
}

// docs/commands.md: the same help, every command's in full, as Markdown. A test holds the file to it.
std::string reference_markdown() {
  std::string text =
      "# plumb command reference\n\n"
      "Generated from plumb's own option declarations by `plumb help --markdown > docs/commands.md`;\n"
      "a test fails when this file and `plumb --help` disagree. What each command computes, and how, is in\n"
      "[using.md](using.md).\n\n## plumb\n\n```\n" + top_help() + "```\n";
  for (const Command* c : commands())
    text += fmt::format("\n## plumb {}\n\n```\n{}```\n", c->spec.name, plumb::cli::help_text(c->spec));
  return text;
}

int dispatch(const std::vector<std::string>& argv) {
  using namespace plumb::cli;
  if (argv.size() == 2 && argv[0] == "help" && argv[1] == "--markdown") {
    std::cout << reference_markdown();
    return kOk;
  }
  if (argv.empty() || argv[0] == "--help" || argv[0] == "-h" || argv[0] == "help") {
    std::cout << top_help();
    return argv.empty() ? kBadInput : kOk;
  }
  if (argv[0] == "--version") {
    std::cout << "plumb " << PLUMB_VERSION << "\n";
    return kOk;
  }
  std::vector<std::string> names;
  for (const Command* c : commands()) names.push_back(c->spec.name);
  for (const Command* c : commands()) {
    if (c->spec.name != argv[0]) continue;
    std::vector<std::string> rest(argv.begin() + 1, argv.end());
    if (wants_help(rest)) {
      std::cout << help_text(c->spec);
      return kOk;
    }
    try {
      return c->run(Args(c->spec, rest));
    } catch (const std::invalid_argument& e) {  // UsageError and models' ScheduleError: bad input
      std::cerr << fmt::format("plumb {}: {}\n(see plumb {} --help)\n", c->spec.name, e.what(), c->spec.name);
      return kBadInput;
    } catch (const UsageError& e) {
      std::cerr << fmt::format("plumb {}: {}\n(see plumb {} --help)\n", c->spec.name, e.what(), c->spec.name);
      return kBadInput;
    } catch (const plumb::sim::LimitError& e) {  // the inputs ask for more than one simulation may take
      const std::vector<std::string> files = Args(c->spec, rest).positionals();
      std::cerr << fmt::format("plumb {}: {}{}\n", c->spec.name, files.empty() ? "" : files.front() + ": ", e.what());
      return kBadInput;
    }
  }
  std::string hint = plumb::nearest_word(argv[0], names);
  std::cerr << fmt::format("plumb: unknown command \"{}\"{}\n(see plumb --help)\n", argv[0],
                           hint.empty() ? "" : fmt::format("; did you mean \"{}\"?", hint));
  return kBadInput;
}

}  // namespace

namespace {

// Ctrl-C: say so and stop with the shell's code for it (outputs are renamed into place only when
// whole, so none is left half-written).
extern "C" void on_interrupt(int) {
  static const char message[] = "\nplumb: interrupted\n";
  [[maybe_unused]] ssize_t written = write(STDERR_FILENO, message, sizeof message - 1);
  _exit(130);
}

}  // namespace

int main(int argc, char** argv) {
  std::signal(SIGINT, on_interrupt);
  try {
    return dispatch(std::vector<std::string>(argv + 1, argv + argc));
  } catch (const plumb::InputError& e) {
    std::cerr << e.what() << "\n";
    return plumb::cli::kBadInput;
  } catch (const std::exception& e) {
    std::cerr << "plumb: internal error: " << e.what() << "\n";
    return plumb::cli::kInternal;
  }
}
