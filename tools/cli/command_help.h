// `ember <command> --help`: the flags one subcommand reads, with their
// defaults and help text, found through Abseil's flag registry.
//
// Which flags a command reads is stated here, not inferred from where a flag
// is defined: a command's own flags are those whose help text has a part
// "<command>: " (or "<command> <kind>: ", as `gen rmat: `) starting it or a
// sentence ("gen rmat: ... gen kg: ..." is a flag of two kinds), and the flags it
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
// by kind for `gen`), then the shared ones. With `kind` ("sbm" for `ember
// gen sbm --help`), only the flags of that kind and the shared ones. Names
// are written with '-' as users type them. "" for a command the table does
// not know.
std::string CommandFlagsHelp(std::string_view command, std::string_view kind = "");

// The flags set to other than their defaults (on the command line or by
// --flagfile) that `command` (of `kind`, when not empty) does not read, as
// users type them ("--batch-size"), sorted; empty when it reads them all.
// `tune` also reads every flag of `train` (as fixed settings of its runs).
// Empty for a command the table does not know.
// REQUIRES: the command line has been parsed (absl::ParseCommandLine).
std::vector<std::string> FlagsNotReadBy(std::string_view command, std::string_view kind = "");

// Every flag `command` reads (of all its kinds), as registered, sorted.
std::vector<std::string> FlagsReadBy(std::string_view command);

// Up to three flags of `command` nearest to the unknown `name` (by edit
// distance, a prefix counting as one edit), as users type them
// ("--epochs"), nearest first; empty when none is close.
std::vector<std::string> NearestFlags(std::string_view command, std::string_view name);

// The names (as registered, with '_') of flags that ember defines but that
// no command in `commands` shows: flags no --help would ever mention.
std::vector<std::string> FlagsShownByNoCommand(const std::vector<std::string>& commands);

}  // namespace ember::tools

#endif  // EMBER_TOOLS_CLI_COMMAND_HELP_H_
