#include "tools/cli.h"

#include <cstdio>
#include <cstring>
#include <string_view>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"

namespace ember::tools {
namespace {

struct Subcommand {
  const char* name;
  const char* usage;
  int (*main)(const std::vector<std::string>&);
};

constexpr Subcommand kSubcommands[] = {
    {"import", "--out GRAPH [options] FILE...   import edge lists into a graph",
     ImportMain},
    {"train", "GRAPH [options]                  train embeddings", TrainMain},
    {"eval", "GRAPH --split test|valid          evaluate link prediction",
     EvalMain},
    {"export", "GRAPH --format F --out PATH      export embeddings",
     ExportMain},
    {"neighbors", "GRAPH --node NAME [--k 10]    nearest neighbours",
     NeighborsMain},
    {"inspect", "GRAPH [--json]                 describe a graph", InspectMain},
    {"gen", "rmat|sbm|features|kg --out FILE    generate a synthetic graph",
     GenMain},
};

std::string Usage() {
  std::string u =
      "ember: node embeddings for graphs too large for memory.\n\n"
      "usage: ember <command> [flags] [args]\n\ncommands:\n";
  for (const Subcommand& c : kSubcommands) {
    absl::StrAppend(&u, "  ember ", c.name, " ", c.usage, "\n");
  }
  absl::StrAppend(&u,
                  "\n`ember <command> --help` lists flags; see README.md.\n");
  return u;
}

// Abseil flag names use '_'; users type `--edge-factor`. Rewrites the name
// part of every `--flag[=value]` argument (up to a bare `--`) to '_'.
void NormalizeFlagNames(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* a = argv[i];
    if (std::strcmp(a, "--") == 0) return;
    if (a[0] != '-' || a[1] != '-') continue;
    for (char* c = a + 2; *c != '\0' && *c != '='; ++c) {
      if (*c == '-') *c = '_';
    }
  }
}

}  // namespace

int ReportStatus(const std::string& command, const absl::Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "ember %s: %s\n", command.c_str(),
               std::string(status.message()).c_str());
  return 1;
}

int RunCli(int argc, char** argv) {
  absl::SetProgramUsageMessage(Usage());
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "help") == 0) {
    std::fputs(Usage().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const std::string_view name = argv[1];
  for (const Subcommand& c : kSubcommands) {
    if (name != c.name) continue;
    // Parse the flags after the subcommand; argv[1] stands in as argv[0].
    NormalizeFlagNames(argc, argv);
    std::vector<char*> positional = absl::ParseCommandLine(argc - 1, argv + 1);
    std::vector<std::string> args(positional.begin() + 1, positional.end());
    return c.main(args);
  }
  std::fprintf(stderr, "ember: unknown command '%s'\n\n%s", argv[1],
               Usage().c_str());
  return 2;
}

}  // namespace ember::tools
