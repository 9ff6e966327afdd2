#pragma once
// Each subcommand: its declaration (for parsing and --help) and its body, returning an exit code.
#include <string>
#include <vector>

#include "cli/args/args.hpp"

namespace plumb::cli {

enum ExitCode { kOk = 0, kBadInput = 2, kInfeasible = 3, kInternal = 70 };

struct Command {
  CommandSpec spec;
  int (*run)(const Args& args);
};

const Command& memory_command();
const Command& schedule_command();
const Command& collective_command();
const Command& ops_command();
const Command& run_command();
const Command& plan_command();
const Command& merge_command();
const Command& calibrate_command();
const Command& compare_command();
const Command& validate_command();
const Command& trace_command();
const Command& import_command();

// Writes text to a file; an unwritable path is a UsageError naming it.
void write_file(const std::string& path, const std::string& text);
// A file's text; a missing or unreadable one is an InputError naming it.
std::string read_text(const std::string& path);

}  // namespace plumb::cli
