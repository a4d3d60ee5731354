#include "tools/cli/cli.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "tools/cli/build_info.h"
#include "tools/cli/command_help.h"
#include "train/blas/blas_startup.h"
#include "train/distributed/launcher.h"

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
    {"eval", "GRAPH [--split test|valid|train] [flags]",
     "evaluate link prediction (MRR, Hits@k) or, with --protocol recommend, recommendations "
     "(Recall@K, NDCG@K)",
     EvalMain},
    {"export", "GRAPH --format F --out PATH [flags]",
     "export embeddings (tsv, npy, w2v, fvecs, h5)", ExportMain},
    {"neighbors", "GRAPH --node NAME [--k 10] [flags]", "nearest neighbours of nodes (FAISS)",
     NeighborsMain},
    {"recommend", "GRAPH --relation R --out FILE|- [--k 10] [--users FILE|-|TYPE] [flags]",
     "top K destinations of a relation for every source, what it has left out (TSV)",
     RecommendMain},
    {"tune", "GRAPH --grid FLAG=V1,V2,... [--grid ...] [train flags]",
     "short runs over a grid of train settings; writes the best as a flagfile", TuneMain},
    {"inspect", "GRAPH [--json]", "describe a graph", InspectMain},
    {"gather", "GRAPH COPY...",
     "bring into GRAPH the rows ranks checkpointed into their own copies (train --rank-copies)",
     GatherMain},
    {"gen", "KIND --out FILE [flags]", "generate a synthetic graph (KIND: rmat, sbm, features, kg)",
     GenMain},
};

// `ember gen <kind>`: what follows `ember gen`, for `ember gen <kind> --help`.
struct GenKind {
  const char* name;
  const char* synopsis;
};
constexpr GenKind kGenKinds[] = {
    {"rmat",
     "rmat --scale S --edge-factor E [--relations R] [--hubs K [--hub-fraction F]] "
     "--out FILE[.gz]"},
    {"sbm", "sbm --nodes N --blocks K --avg-degree D --mixing M --out FILE --labels-out FILE"},
    {"features",
     "features --labels LABELS --out FILE [--vocab V] [--nnz-alpha A] "
     "[--max-nnz M]"},
    {"kg",
     "kg --out TRAIN --valid-out VALID --test-out TEST [--relations-out FILE] "
     "[--nodes N] [--types T] [--relations R]"},
};

const GenKind* FindGenKind(std::string_view name) {
  for (const GenKind& k : kGenKinds) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

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

// The first argument after the command that is not a flag (a graph, or
// gen's kind), skipping the values of flags given as `--name value`; ""
// when there is none.
std::string FirstPositional(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") return i + 1 < argc ? argv[i + 1] : "";
    if (a.size() < 2 || a[0] != '-') return std::string(a);
    a.remove_prefix(a[1] == '-' ? 2 : 1);
    if (a.find('=') != std::string_view::npos) continue;
    std::string name(a);
    std::replace(name.begin(), name.end(), '-', '_');
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
    if (flag != nullptr && !flag->IsOfType<bool>()) ++i;  // its value
  }
  return "";
}

// The first flag of argv (after the command, up to a bare `--`) that names
// no flag at all, as typed; "" when all do. Flags inside a --flagfile are
// Abseil's to check.
// REQUIRES: NormalizeFlagNames has run.
std::string UnknownFlag(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") return "";
    if (a.size() < 2 || a[0] != '-') continue;  // a positional, or "-" (stdin)
    std::string_view name = a.substr(a[1] == '-' ? 2 : 1);
    const bool has_value = name.find('=') != std::string_view::npos;
    name = name.substr(0, name.find('='));
    // Abseil's own: --helpfull and its kin, --flagfile, --fromenv, ...
    static constexpr std::string_view kAbseilFlags[] = {
        "help",    "helpfull",        "helpshort", "helppackage", "helpon",     "helpmatch",
        "version", "only_check_args", "flagfile",  "fromenv",     "tryfromenv", "undefok"};
    if (std::find(std::begin(kAbseilFlags), std::end(kAbseilFlags), name) !=
        std::end(kAbseilFlags)) {
      if (!has_value && (name == "flagfile" || name == "fromenv" || name == "tryfromenv" ||
                         name == "undefok" || name == "helpon" || name == "helpmatch")) {
        ++i;  // its value
      }
      continue;
    }
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(std::string(name));
    if (flag == nullptr && name.starts_with("no")) {
      const absl::CommandLineFlag* negated = absl::FindCommandLineFlag(std::string(name.substr(2)));
      if (negated != nullptr && negated->IsOfType<bool>()) continue;
    }
    if (flag == nullptr) return std::string(a.substr(0, a.find('=')));
    if (!has_value && !flag->IsOfType<bool>()) ++i;  // its value
  }
  return "";
}

// --helpfull names each flag's source file: from the project's top folder
// (or Abseil's) on, never the path of the tree it was built in.
std::string SourceRelativePath(absl::string_view path) {
  for (const char* top : {"absl/", "tools/", "train/", "storage/", "partition/", "tests/"}) {
    const size_t at = path.rfind(top);
    if (at != absl::string_view::npos && (at == 0 || path[at - 1] == '/')) {
      return std::string(path.substr(at));
    }
  }
  const size_t slash = path.rfind('/');
  return std::string(slash == absl::string_view::npos ? path : path.substr(slash + 1));
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

// Valued flags that keep the two forms of a switch (they were bools):
// a bare `--f` means `--f=true` and `--nof` means `--f=false`, which their
// parsers accept. `--f VALUE` keeps its value when VALUE is one of these.
struct SwitchFlag {
  std::string_view name;
  std::string_view values;  // '|'-separated
};
constexpr SwitchFlag kSwitchFlags[] = {
    {"exclude_known", "all|train|none|true|false"},
};

// REQUIRES: NormalizeFlagNames has run. The rewritten arguments point at
// strings that live until the process ends.
void ExpandSwitchFlags(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--") return;
    for (const SwitchFlag& f : kSwitchFlags) {
      const bool bare = a.substr(0, 2) == "--" && a.substr(2) == f.name;
      const bool negated = a.substr(0, 4) == "--no" && a.substr(4) == f.name;
      if (!bare && !negated) continue;
      const std::vector<std::string> values =
          absl::StrSplit(absl::string_view(f.values.data(), f.values.size()), '|');
      if (bare && i + 1 < argc &&
          std::find(values.begin(), values.end(), argv[i + 1]) != values.end()) {
        continue;  // --f VALUE
      }
      static auto* kept = new std::vector<std::unique_ptr<std::string>>;
      kept->push_back(std::make_unique<std::string>(
          absl::StrCat("--", std::string(f.name), negated ? "=false" : "=true")));
      argv[i] = kept->back()->data();
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

// The flag names (with '_') given on this process's command line.
std::set<std::string>& NamedFlags() {
  static auto* names = new std::set<std::string>();
  return *names;
}

// Records every `--name[=value]` (and `-name`) of argv, up to a bare `--`.
// REQUIRES: NormalizeFlagNames has run.
void RecordNamedFlags(int argc, char** argv) {
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (a == "--") return;
    if (a.size() < 2 || a[0] != '-') continue;
    a.remove_prefix(a[1] == '-' ? 2 : 1);
    a = a.substr(0, a.find('='));
    NamedFlags().emplace(a);
    if (a.starts_with("no")) NamedFlags().emplace(a.substr(2));  // --nofoo sets foo
  }
}

}  // namespace

bool FlagWasSet(std::string_view name) {
  if (NamedFlags().count(std::string(name)) > 0) return true;
  const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(std::string(name));
  return flag != nullptr && flag->CurrentValue() != flag->DefaultValue();
}

int ReportStatus(const std::string& command, const absl::Status& status) {
  if (status.ok()) return 0;
  std::fprintf(stderr, "ember %s: %s\n", command.c_str(),
               std::string(status.message()).c_str());
  return 1;
}

std::string CommandHelpText(std::string_view command, std::string_view kind) {
  const Subcommand* c = FindSubcommand(command);
  if (c == nullptr) return "";
  const GenKind* gen = command == "gen" ? FindGenKind(kind) : nullptr;
  if (gen == nullptr) kind = "";
  return absl::StrCat("usage: ember ", c->name, " ", gen != nullptr ? gen->synopsis : c->synopsis,
                      "\n", c->summary, "\n\n", CommandFlagsHelp(command, kind));
}

std::string VersionText() {
  return absl::StrCat("ember ", BuildVersion(), " (commit ", BuildCommit(), ")\n", BlasLine(), "\n",
                      BlasWarning().empty() ? "" : absl::StrCat(BlasWarning(), "\n"),
                      "CUDA trainer: ", BuildCuda(), "\n", "MPI ranks: ", BuildMpi(), "\n");
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
  if (std::strcmp(argv[1], "--version") == 0 || std::strcmp(argv[1], "version") == 0) {
    std::fputs(VersionText().c_str(), stdout);
    return 0;
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
  NormalizeFlagNames(argc, argv);
  ExpandSwitchFlags(argc, argv);
  if (AsksForHelp(argc, argv)) {
    std::fputs(CommandHelpText(c->name, FirstPositional(argc, argv)).c_str(), stdout);
    return 0;
  }
  if (const std::string unknown = UnknownFlag(argc, argv); !unknown.empty()) {
    std::string typed = unknown;
    std::replace(typed.begin(), typed.end(), '_', '-');
    const std::vector<std::string> near =
        NearestFlags(c->name, typed.substr(typed.find_first_not_of('-')));
    std::fprintf(stderr, "ember %s: unknown flag %s%s; `ember %s --help` lists its flags\n",
                 c->name, typed.c_str(),
                 near.empty()
                     ? ""
                     : absl::StrCat(" (did you mean ", absl::StrJoin(near, " or "), "?)").c_str(),
                 c->name);
    return 2;
  }
  absl::SetProgramUsageMessage(Usage());
  absl::FlagsUsageConfig usage_config;
  usage_config.normalize_filename = SourceRelativePath;
  // `ember CMD --version` prints what `ember --version` does (Abseil's own
  // line would say only whether NDEBUG was defined).
  usage_config.version_string = [] { return VersionText(); };
  absl::SetFlagsUsageConfig(usage_config);
  // Parse the flags after the subcommand; argv[1] stands in as argv[0].
  RecordNamedFlags(argc, argv);
  std::vector<std::string> joined = JoinRepeatedFlags(argc, argv);
  std::vector<char*> joined_argv;
  for (std::string& a : joined) joined_argv.push_back(a.data());
  std::vector<char*> positional =
      absl::ParseCommandLine(static_cast<int>(joined_argv.size()) - 1, joined_argv.data() + 1);
  std::vector<std::string> args(positional.begin() + 1, positional.end());
  const std::string kind = std::string_view(c->name) == "gen" && !args.empty() ? args[0] : "";
  if (const std::vector<std::string> unread = FlagsNotReadBy(c->name, kind); !unread.empty()) {
    const std::string who = kind.empty() ? c->name : absl::StrCat(c->name, " ", kind);
    std::fprintf(stderr, "ember %s: %s %s not %s of %s (`ember %s --help` lists them)\n", c->name,
                 absl::StrJoin(unread, ", ").c_str(), unread.size() == 1 ? "is" : "are",
                 unread.size() == 1 ? "a flag" : "flags", who.c_str(), who.c_str());
    return 2;
  }
  return c->main(args);
}

}  // namespace ember::tools
