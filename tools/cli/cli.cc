#include "tools/cli/cli.h"

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/match.h"
#include "train/distributed/launcher.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_format.h"
#include "tools/cli/command_help.h"

namespace ember::tools {
namespace {

struct Subcommand {
  const char* name;
  const char* synopsis;  // what follows `ember <name>`
  const char* summary;   // one line
  int (*main)(const std::vector<std::string>&);
};

constexpr Subcommand kSubcommands[] = {
    {"import", "--out GRAPH [flags] FILE...", "import edge lists into a graph", ImportMain},
    {"train", "GRAPH [flags]", "train embeddings", TrainMain},
    {"eval", "GRAPH [--split test|valid] [flags]", "evaluate link prediction (MRR, Hits@k)",
     EvalMain},
    {"export", "GRAPH --format F --out PATH [flags]", "export embeddings (tsv, npy, w2v, fvecs)",
     ExportMain},
    {"neighbors", "GRAPH --node NAME [--k 10] [flags]", "nearest neighbours of nodes (FAISS)",
     NeighborsMain},
    {"tune", "GRAPH --grid FLAG=V1,V2,... [--grid ...] [train flags]",
     "short runs over a grid of train settings; writes the best as a flagfile", TuneMain},
    {"inspect", "GRAPH [--json]", "describe a graph", InspectMain},
    {"gen", "KIND --out FILE [flags]", "generate a synthetic graph (KIND: rmat, sbm, features, kg)",
     GenMain},
};

const Subcommand* FindSubcommand(std::string_view name) {
  for (const Subcommand& c : kSubcommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

std::string Usage() {
  std::string u =
      "ember: node embeddings for graphs too large for memory.\n\n"
      "usage: ember <command> [flags] [args]\n\ncommands:\n";
  for (const Subcommand& c : kSubcommands) {
    absl::StrAppendFormat(&u, "  %-10s %s\n", c.name, c.summary);
  }
  absl::StrAppend(&u,
                  "\n`ember <command> --help` lists that command's flags; see README.md.\n");
  return u;
}

// Whether the arguments after the command (up to a bare `--`) ask for help.
bool AsksForHelp(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return false;
    if (a == "--help" || a == "-help" || a == "-h" || a == "--helpshort") return true;
  }
  return false;
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

// Flags that may be repeated, their values joined by ';' into one.
constexpr const char* kRepeatableFlags[] = {"grid"};

// argv with every repeatable flag's occurrences (`--f=v` or `--f v`, names
// normalized) merged into one `--f=v1;v2` at the first one's place.
std::vector<std::string> JoinRepeatedFlags(int argc, char** argv) {
  std::vector<std::string> out(argv, argv + argc);
  for (const char* name : kRepeatableFlags) {
    const std::string bare = absl::StrCat("--", name);
    const std::string with_value = bare + "=";
    std::vector<std::string> kept, values;
    size_t first = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      if (out[i] == "--") {
        kept.insert(kept.end(), out.begin() + i, out.end());
        break;
      }
      const bool joined = absl::StartsWith(out[i], with_value);
      if (!joined && !(out[i] == bare && i + 1 < out.size())) {
        kept.push_back(out[i]);
        continue;
      }
      if (values.empty()) first = kept.size();
      values.push_back(joined ? out[i].substr(with_value.size()) : out[++i]);
    }
    if (!values.empty()) {
      kept.insert(kept.begin() + first, with_value + absl::StrJoin(values, ";"));
    }
    out = std::move(kept);
  }
  return out;
}

}  // namespace

int ReportStatus(const std::string& command, const absl::Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "ember %s: %s\n", command.c_str(),
               std::string(status.message()).c_str());
  return 1;
}

std::string CommandHelpText(std::string_view command) {
  const Subcommand* c = FindSubcommand(command);
  if (c == nullptr) return "";
  return absl::StrCat("usage: ember ", c->name, " ", c->synopsis, "\n", c->summary, "\n\n",
                      CommandFlagsHelp(command));
}

std::vector<std::string> CommandNames() {
  std::vector<std::string> names;
  for (const Subcommand& c : kSubcommands) names.emplace_back(c.name);
  return names;
}

int RunCli(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 ||
      std::strcmp(argv[1], "-h") == 0 || std::strcmp(argv[1], "help") == 0) {
    std::fputs(Usage().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  const Subcommand* c = FindSubcommand(argv[1]);
  if (c == nullptr) {
    std::fprintf(stderr, "ember: unknown command '%s'\n\n%s", argv[1], Usage().c_str());
    return 2;
  }
  const uint32_t ranks = LauncherWorldSize();
  if (ranks > 1 && std::string_view(c->name) != "train") {
    std::fprintf(stderr, "ember %s: started by an MPI launcher as one of %u ranks; only "
                 "`ember train` runs across ranks: run `ember %s` as one process, without "
                 "mpirun\n", c->name, ranks, c->name);
    return 2;
  }
  if (AsksForHelp(argc, argv)) {
    std::fputs(CommandHelpText(c->name).c_str(), stdout);
    return 0;
  }
  absl::SetProgramUsageMessage(Usage());
  // Parse the flags after the subcommand; argv[1] stands in as argv[0].
  NormalizeFlagNames(argc, argv);
  std::vector<std::string> joined = JoinRepeatedFlags(argc, argv);
  std::vector<char*> joined_argv;
  for (std::string& a : joined) joined_argv.push_back(a.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(joined_argv.size()) - 1, joined_argv.data() + 1);
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  if (const std::vector<std::string> unread = FlagsNotReadBy(c->name); !unread.empty()) {
    std::fprintf(stderr, "ember %s: %s %s not %s of %s (`ember %s --help` lists them)\n",
                 c->name, absl::StrJoin(unread, ", ").c_str(), unread.size() == 1 ? "is" : "are",
                 unread.size() == 1 ? "a flag" : "flags", c->name, c->name);
    return 2;
  }
  return c->main(args);
}

}  // namespace ember::tools
