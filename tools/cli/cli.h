// The `ember` command line: one binary, one subcommand per job. Each
// subcommand's entry point parses nothing itself (flags are parsed by
// RunCli), calls a library function, prints, and returns the exit code.
#ifndef EMBER_TOOLS_CLI_CLI_H_
#define EMBER_TOOLS_CLI_CLI_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"

namespace ember::tools {

// `args` are the positional arguments after the subcommand name.
int ImportMain(const std::vector<std::string>& args);
int TrainMain(const std::vector<std::string>& args);
int EvalMain(const std::vector<std::string>& args);
int ExportMain(const std::vector<std::string>& args);
int NeighborsMain(const std::vector<std::string>& args);
int InspectMain(const std::vector<std::string>& args);
int GatherMain(const std::vector<std::string>& args);
int GenMain(const std::vector<std::string>& args);
int TuneMain(const std::vector<std::string>& args);
int RecommendMain(const std::vector<std::string>& args);

// Parses flags and dispatches on argv[1]; returns the process exit code.
// `ember --help` lists the commands; `ember <command> --help` (or -h)
// prints CommandHelpText(command) to stdout and returns 0; `ember
// --version` prints VersionText(). A flag that names no flag, or one the
// command does not read, is refused with exit status 2 (with the nearest
// flag names for an unknown one).
int RunCli(int argc, char** argv);

// "usage: ember <command> <synopsis>", its one-line summary, and the flags
// it reads (CommandFlagsHelp); for `gen` with a known `kind` ("sbm"), that
// generator's synopsis and flags only. "" for an unknown command.
std::string CommandHelpText(std::string_view command, std::string_view kind = "");
// `ember --version`: the version and commit of the build, the GEMM backend
// and kernel it runs on, and whether CUDA training and MPI ranks are built.
std::string VersionText();
// The subcommands, in the order `ember --help` lists them.
std::vector<std::string> CommandNames();

// Whether flag `name` (as registered, with '_') was set for this run: named
// on the command line (even to its default), or given another value (by
// --flagfile). REQUIRES: RunCli has parsed the command line.
bool FlagWasSet(std::string_view name);

// Prints "ember <command>: <message>" to stderr and returns 1 (or 0 for OK).
int ReportStatus(const std::string& command, const absl::Status& status);

}  // namespace ember::tools

#endif  // EMBER_TOOLS_CLI_CLI_H_
