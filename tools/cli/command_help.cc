#include "tools/cli/command_help.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace ember::tools {
namespace {

// A flag defined by one command (or in common_flags.cc) and read by another.
struct SharedFlag {
  const char* name;  // as registered, with '_'
  // Where the command gives the flag a meaning of its own: the help and the
  // default to show instead of the flag's. nullptr: the flag's own.
  const char* help = nullptr;
  const char* default_value = nullptr;
};

struct CommandFlags {
  const char* command;
  std::vector<SharedFlag> shared;
};

// The shared flags each command reads (its own flags are found by their
// help prefix). Kept in step with the GetFlag calls of tools/cmd_*.cc and
// their ThreadCount() / ProgressFromFlags() calls (common_flags.h).
const std::vector<CommandFlags>& Table() {
  static const auto* table = new std::vector<CommandFlags>{
      {"import",
       {{"out"}, {"seed"}, {"threads"}, {"overwrite"}, {"json"}, {"partitions"}, {"dim"},
        {"quiet"}, {"progress_interval"}}},
      {"train",
       {{"dim"}, {"memory_budget", "train: memory the run may use (embeddings, buffers, edge "
                                   "windows, RocksDB caches), e.g. 4G, 512M."},
        {"seed"}, {"threads"}, {"json"}, {"quiet"}, {"progress_interval"}}},
      {"eval",
       {{"split", "eval: the split to evaluate: test, valid or train.", "test"},
        {"memory_budget", "eval: memory ranking may use (the largest partition's rows, a "
                          "batch of edges, RocksDB's cache); batches shrink to fit, and a "
                          "model that cannot fit is refused before ranking."},
        {"seed"}, {"threads"}, {"json"}, {"quiet"}, {"progress_interval"}}},
      {"export",
       {{"out"},
        {"memory_budget", "export: memory the export may hold (the largest partition's rows, "
                          "a batch of text, RocksDB's cache); a bigger one is refused before "
                          "any output is created."},
        {"overwrite"}, {"threads"}, {"json"}, {"quiet"}, {"progress_interval"}}},
      {"neighbors",
       {{"memory_budget", "neighbors: memory the index may take (every vector, as FAISS "
                          "holds them, plus its links or lists); a bigger index is refused "
                          "before it is built."},
        {"seed"}, {"threads"}, {"overwrite"}, {"json"}, {"quiet"}, {"progress_interval"}}},
      {"tune",
       {{"epochs", "tune: epochs per run.", "2"},
        {"eval_max_edges", "tune: validation edges per run, ranked against all nodes."},
        {"out", "tune: the flagfile to write.", "GRAPH/tune.flags"},
        {"dim"}, {"seed"}, {"threads"}, {"json"}, {"quiet"}}},
      {"inspect", {{"json"}}},
      {"gen",
       {{"out"}, {"seed"}, {"threads"}, {"overwrite"}, {"json"}, {"quiet"},
        {"relations_out",
         "gen kg: write one name<TAB>kind<TAB>partner line per relation here."}}},
  };
  return *table;
}

const CommandFlags* Find(std::string_view command) {
  for (const CommandFlags& c : Table()) {
    if (command == c.command) return &c;
  }
  return nullptr;
}

bool IsEmberFlag(const absl::CommandLineFlag& flag) {
  // Abseil's own flags (--flagfile, --helpfull, ...) live in its sources.
  return !absl::StrContains(flag.Filename(), "absl/");
}

// For a flag of `command` (help "train: ..." or "gen rmat: ..."), the kind
// ("" or "rmat") and the help without its prefix.
struct OwnFlag {
  std::string kind;
  std::string help;
};
std::optional<OwnFlag> AsOwnFlag(const std::string& help, std::string_view command) {
  const absl::string_view h(help);
  const absl::string_view c(command.data(), command.size());
  if (!absl::StartsWith(h, c) || h.size() <= c.size()) return std::nullopt;
  absl::string_view rest = h.substr(c.size());
  std::string kind;
  if (rest[0] == ' ') {
    const size_t colon = rest.find(':');
    const size_t space = rest.find(' ', 1);
    if (colon == absl::string_view::npos || (space != absl::string_view::npos && space < colon)) {
      return std::nullopt;
    }
    kind = std::string(rest.substr(1, colon - 1));
    rest = rest.substr(colon);
  }
  if (rest[0] != ':') return std::nullopt;
  rest.remove_prefix(1);
  while (!rest.empty() && rest[0] == ' ') rest.remove_prefix(1);
  return OwnFlag{std::move(kind), std::string(rest)};
}

// The help text without the "<command>: " prefix it starts with, if any.
std::string StripCommandPrefix(const std::string& help, std::string_view command) {
  std::optional<OwnFlag> own = AsOwnFlag(help, command);
  return own.has_value() ? own->help : help;
}

// "  --name=default" and the help wrapped to 78 columns, indented by 6.
void AppendFlag(std::string_view name, const std::string& default_value,
                const std::string& help, std::string* out) {
  std::string dashed(name);
  std::replace(dashed.begin(), dashed.end(), '_', '-');
  absl::StrAppend(out, "  --", dashed, "=", default_value.empty() ? "\"\"" : default_value, "\n");
  std::string line;
  for (absl::string_view word : absl::StrSplit(help, ' ', absl::SkipEmpty())) {
    if (!line.empty() && line.size() + 1 + word.size() > 72) {
      absl::StrAppend(out, "      ", line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(out, "      ", line, "\n");
}

}  // namespace

std::string CommandFlagsHelp(std::string_view command) {
  const CommandFlags* entry = Find(command);
  if (entry == nullptr) return "";
  // kind -> flag name -> entry text, so that the listing is sorted.
  std::map<std::string, std::map<std::string, std::string>> own;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsEmberFlag(*flag)) continue;
    std::optional<OwnFlag> o = AsOwnFlag(flag->Help(), command);
    if (!o.has_value()) continue;
    AppendFlag(std::string_view(name.data(), name.size()), flag->DefaultValue(), o->help,
               &own[o->kind][std::string(name)]);
  }
  std::string out;
  for (const auto& [kind, flags] : own) {
    absl::StrAppend(&out, kind.empty() ? std::string(command) : absl::StrCat(std::string(command), " ", kind),
                    " flags:\n");
    for (const auto& [name, text] : flags) absl::StrAppend(&out, text);
    absl::StrAppend(&out, "\n");
  }
  std::string shared;
  for (const SharedFlag& s : entry->shared) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(s.name);
    if (flag == nullptr) continue;  // FlagsShownByNoCommand's test catches a stale name
    AppendFlag(s.name, s.default_value != nullptr ? s.default_value : flag->DefaultValue(),
               StripCommandPrefix(s.help != nullptr ? s.help : flag->Help(), command), &shared);
  }
  if (!shared.empty()) absl::StrAppend(&out, "shared flags:\n", shared, "\n");
  absl::StrAppend(&out,
                  "--flagfile=FILE reads flags from FILE, one --name=value a line; "
                  "--helpfull lists every flag.\n");
  return out;
}

namespace {

// Whether `command` reads `flag`: its own flag, or one of its shared ones.
// --quiet and --progress-interval are taken by every command, so that
// scripts can pass them throughout; commands without progress output
// print nothing more or less.
bool Reads(const CommandFlags& command, std::string_view name, const absl::CommandLineFlag& flag) {
  if (name == "quiet" || name == "progress_interval") return true;
  return AsOwnFlag(flag.Help(), command.command).has_value() ||
         std::any_of(command.shared.begin(), command.shared.end(),
                     [&](const SharedFlag& s) { return name == s.name; });
}

}  // namespace

std::vector<std::string> FlagsNotReadBy(std::string_view command) {
  std::vector<std::string> out;
  const CommandFlags* entry = Find(command);
  if (entry == nullptr) return out;
  const CommandFlags* also = command == "tune" ? Find("train") : nullptr;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    // Set: its value is not its default (this Abseil keeps "specified on
    // the command line" private; a flag given its default changes nothing).
    if (!IsEmberFlag(*flag) || flag->CurrentValue() == flag->DefaultValue()) continue;
    const std::string_view n(name.data(), name.size());
    if (Reads(*entry, n, *flag) || (also != nullptr && Reads(*also, n, *flag))) continue;
    std::string dashed = absl::StrCat("--", std::string(n));
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    out.push_back(std::move(dashed));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> FlagsShownByNoCommand(const std::vector<std::string>& commands) {
  std::vector<std::string> out;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsEmberFlag(*flag)) continue;
    bool shown = false;
    for (const std::string& command : commands) {
      const CommandFlags* entry = Find(command);
      if (entry == nullptr) continue;
      shown = Reads(*entry, std::string_view(name.data(), name.size()), *flag);
      if (shown) break;
    }
    if (!shown) out.emplace_back(name);
  }
  // Shared names that name no flag at all.
  for (const CommandFlags& c : Table()) {
    for (const SharedFlag& s : c.shared) {
      if (absl::FindCommandLineFlag(s.name) == nullptr) {
        out.push_back(absl::StrCat(c.command, ": --", s.name, " (no such flag)"));
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace ember::tools
