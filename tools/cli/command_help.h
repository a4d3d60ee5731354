// `ember <command> --help`: the flags one subcommand reads, with their
// defaults and help text, found through Abseil's flag registry.
//
// Which flags a command reads is stated here, not inferred from where a flag
// is defined: a command's own flags are those whose help text starts with
// "<command>: " (or "<command> <kind>: ", as `gen rmat: `), and the flags it
// shares with other commands (--seed, --threads, --memory-budget, ...) are
// listed in a table in command_help.cc. Keep that table true when a command
// starts or stops reading a shared flag.
#ifndef EMBER_TOOLS_CLI_COMMAND_HELP_H_
#define EMBER_TOOLS_CLI_COMMAND_HELP_H_

#include <string>
#include <string_view>
#include <vector>

namespace ember::tools {

// The flags section of `ember <command> --help`: one entry per flag, as
// "  --name=DEFAULT" and its help indented below, own flags first (grouped
// by kind for `gen`), then the shared ones. Names are written with '-' as
// users type them. "" for a command the table does not know.
std::string CommandFlagsHelp(std::string_view command);

// The flags set to other than their defaults (on the command line or by
// --flagfile) that `command` does not read, as users type them
// ("--batch-size"), sorted; empty when it reads them all. `tune` also reads
// every flag of `train` (as fixed settings of its runs). Empty for a
// command the table does not know.
// REQUIRES: the command line has been parsed (absl::ParseCommandLine).
std::vector<std::string> FlagsNotReadBy(std::string_view command);

// The names (as registered, with '_') of flags that ember defines but that
// no command in `commands` shows: flags no --help would ever mention.
std::vector<std::string> FlagsShownByNoCommand(const std::vector<std::string>& commands);

}  // namespace ember::tools

#endif  // EMBER_TOOLS_CLI_COMMAND_HELP_H_
