#include "tools/cli/command_help.h"

#include <algorithm>
#include <map>
#include <optional>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/ascii.h"
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
       {{"out"},
        {"seed"},
        {"threads"},
        {"overwrite"},
        {"json"},
        {"partitions"},
        {"dim"},
        {"quiet"},
        {"progress_interval"}}},
      {"train",
       {{"dim"},
        {"memory_budget",
         "train: memory the run may use (embeddings, buffers, edge "
         "windows, RocksDB caches), e.g. 4G, 512M."},
        {"seed"},
        {"threads"},
        {"json"},
        {"quiet"},
        {"verbose"},
        {"progress_interval"}}},
      {"eval",
       {{"split", "eval: the split to evaluate: test, valid or train.", "test"},
        {"relation",
         "eval: with --protocol recommend, the relation evaluated (may be left "
         "out when the graph has one)."},
        {"k",
         "eval: with --protocol recommend, the cut-offs K of Recall@K, NDCG@K and hit "
         "rate.",
         "10,20,100"},
        {"memory_budget",
         "eval: memory ranking may use (the largest partition's rows, a "
         "batch of edges, RocksDB's cache); batches shrink to fit, and a "
         "model that cannot fit is refused before ranking."},
        {"seed"},
        {"threads"},
        {"json"},
        {"quiet"},
        {"verbose"},
        {"progress_interval"}}},
      {"export",
       {{"type",
         "export: only the nodes of this type of a typed graph (imported with --schema), in "
         "global-id order; PATH.meta.json names the type and its first global id. Empty: every "
         "node (h5: every type, each in its own files)."},
        {"out"},
        {"memory_budget",
         "export: memory the export may hold (the largest partition's rows, "
         "a batch of text, RocksDB's cache); a bigger one is refused before "
         "any output is created."},
        {"overwrite"},
        {"threads"},
        {"json"},
        {"quiet"},
        {"progress_interval"}}},
      {"neighbors",
       {{"relation",
         "neighbors: apply this relation's operator to the query: what would NODE "
         "link to through it."},
        {"k", "neighbors: neighbours per query (the query itself excluded)."},
        {"type",
         "neighbors: rank only the nodes of this type of a typed graph: the index holds that "
         "type's rows (row i = the type's first global id + i, also in --save-index's files); "
         "queries may be of any type (--type item --relation likes --node user17: the items "
         "user17 would like). Empty: every node."},
        {"exclude_known",
         "neighbors: with --relation, leave out the nodes the query already links to through "
         "it in the train split (any value but none: all, train or the bare flag; with --type "
         "and a typed relation the ranking is then recommend's with --exclude-known=train); off "
         "unless given.",
         "none"},
        {"memory_budget",
         "neighbors: memory the index may take (every vector, as FAISS "
         "holds them, plus its links or lists); a bigger index is refused "
         "before it is built."},
        {"seed"},
        {"threads"},
        {"overwrite"},
        {"json"},
        {"quiet"},
        {"verbose"},
        {"progress_interval"}}},
      {"tune",
       {{"epochs", "tune: epochs per run.", "2"},
        {"eval_max_edges", "tune: validation edges per run, ranked against all nodes."},
        {"out", "tune: the flagfile to write.", "GRAPH/tune.flags"},
        {"dim"},
        {"seed"},
        {"threads"},
        {"json"},
        {"quiet"},
        {"verbose"}}},
      {"recommend",
       {{"relation",
         "recommend: the relation whose destinations are recommended (may be "
         "left out when the graph has one)."},
        {"k", "recommend: recommendations per source (all the candidates there are, when fewer)."},
        {"out",
         "recommend: the file to write ('-': standard output, for tsv and jsonl), or with "
         "--out-format npy the path prefix of its four files."},
        {"memory_budget",
         "recommend: memory the job may use (a source partition's rows and known items, the "
         "candidates' rows when they fit half of it, a score block a thread, and each source's "
         "top-K heap of 2 x min(K, candidates) x 16 B); too small for one source's heap is "
         "refused before any work."},
        {"overwrite"},
        {"threads"},
        {"json"},
        {"quiet"},
        {"verbose"},
        {"progress_interval"}}},
      {"inspect", {{"json"}}},
      {"gather", {{"quiet"}}},
      {"gen", {{"out"}, {"seed"}, {"threads"}, {"overwrite"}, {"json"}, {"quiet"}}},
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

// One command's part of a help string: "gen rmat: relation types ... (0: 1)."
// is kind "rmat" with the text after the colon. A help string may hold
// several ("gen rmat: ... gen kg: ..."), each starting the string or a
// sentence.
struct OwnFlag {
  std::string kind;
  std::string help;
};

std::vector<OwnFlag> OwnSegments(std::string_view help, std::string_view command) {
  struct Start {
    size_t at;    // where "<command>" begins
    size_t text;  // where its text begins
    std::string_view command;
    std::string kind;
  };
  // Every command's segments: one ends where the next, of any command, starts.
  std::vector<Start> starts;
  for (const CommandFlags& c : Table()) {
    const std::string_view name = c.command;
    for (size_t pos = help.find(name); pos != std::string_view::npos;
         pos = help.find(name, pos + 1)) {
      const bool sentence = pos == 0 || (pos >= 2 && help[pos - 1] == ' ' &&
                                         (help[pos - 2] == '.' || help[pos - 2] == ';'));
      const size_t after = pos + name.size();
      if (!sentence || after >= help.size()) continue;
      if (help[after] == ':') {
        starts.push_back({pos, after + 1, name, ""});
        continue;
      }
      if (help[after] != ' ') continue;
      const size_t colon = help.find(':', after + 1);
      if (colon == std::string_view::npos || colon == after + 1) continue;
      const std::string_view kind = help.substr(after + 1, colon - after - 1);
      if (!std::all_of(kind.begin(), kind.end(),
                       [](char c) { return (c >= 'a' && c <= 'z') || c == '-'; })) {
        continue;
      }
      starts.push_back({pos, colon + 1, name, std::string(kind)});
    }
  }
  std::sort(starts.begin(), starts.end(),
            [](const Start& x, const Start& y) { return x.at < y.at; });
  std::vector<OwnFlag> out;
  for (size_t i = 0; i < starts.size(); ++i) {
    if (starts[i].command != command) continue;
    const size_t end = i + 1 < starts.size() ? starts[i + 1].at : help.size();
    absl::string_view text(help.data() + starts[i].text, end - starts[i].text);
    text = absl::StripAsciiWhitespace(text);
    if (!text.empty() && text.back() == ';') text.remove_suffix(1);
    if (!text.empty() && text.back() != '.' && text.back() != ')') {
      out.push_back({starts[i].kind, absl::StrCat(text, ".")});
    } else {
      out.push_back({starts[i].kind, std::string(text)});
    }
  }
  return out;
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

// Whether `command` (of `kind`, when not empty) reads `flag`: its own flag,
// or one of its shared ones. --quiet, --verbose and --progress-interval are
// taken by every command, so that scripts can pass them throughout;
// commands without progress output print nothing more or less.
bool Reads(const CommandFlags& command, std::string_view kind, std::string_view name,
           const absl::CommandLineFlag& flag) {
  if (name == "quiet" || name == "verbose" || name == "progress_interval") return true;
  for (const OwnFlag& o : OwnSegments(flag.Help(), command.command)) {
    if (kind.empty() || o.kind.empty() || o.kind == kind) return true;
  }
  for (const SharedFlag& s : command.shared) {
    if (name != s.name) continue;
    const std::string help = s.help != nullptr ? s.help : flag.Help();
    const std::vector<OwnFlag> own = OwnSegments(help, command.command);
    return kind.empty() || own.empty() ||
           std::any_of(own.begin(), own.end(),
                       [&](const OwnFlag& o) { return o.kind.empty() || o.kind == kind; });
  }
  return false;
}

}  // namespace

std::string CommandFlagsHelp(std::string_view command, std::string_view kind) {
  const CommandFlags* entry = Find(command);
  if (entry == nullptr) return "";
  // kind -> flag name -> entry text, so that the listing is sorted.
  std::map<std::string, std::map<std::string, std::string>> own;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsEmberFlag(*flag)) continue;
    for (const OwnFlag& o : OwnSegments(flag->Help(), command)) {
      if (!kind.empty() && !o.kind.empty() && o.kind != kind) continue;
      AppendFlag(std::string_view(name.data(), name.size()), flag->DefaultValue(), o.help,
                 &own[o.kind][std::string(name)]);
    }
  }
  std::string out;
  for (const auto& [group, flags] : own) {
    absl::StrAppend(&out, std::string(command), group.empty() ? "" : " ", group, " flags:\n");
    for (const auto& [name, text] : flags) absl::StrAppend(&out, text);
    absl::StrAppend(&out, "\n");
  }
  std::string shared;
  for (const SharedFlag& s : entry->shared) {
    const absl::CommandLineFlag* flag = absl::FindCommandLineFlag(s.name);
    if (flag == nullptr) continue;  // FlagsShownByNoCommand's test catches a stale name
    if (!Reads(*entry, kind, s.name, *flag)) continue;
    const std::string help = s.help != nullptr ? s.help : flag->Help();
    const std::vector<OwnFlag> segments = OwnSegments(help, command);
    std::string text = help;
    for (const OwnFlag& o : segments) {
      if (kind.empty() || o.kind.empty() || o.kind == kind) {
        text = o.help;
        break;
      }
    }
    AppendFlag(s.name, s.default_value != nullptr ? s.default_value : flag->DefaultValue(), text,
               &shared);
  }
  if (!shared.empty()) absl::StrAppend(&out, "shared flags:\n", shared, "\n");
  absl::StrAppend(&out,
                  "--flagfile=FILE reads flags from FILE, one --name=value a line; "
                  "--helpfull lists every flag; --verbose also prints the GEMM backend.\n");
  return out;
}

std::vector<std::string> FlagsNotReadBy(std::string_view command, std::string_view kind) {
  std::vector<std::string> out;
  const CommandFlags* entry = Find(command);
  if (entry == nullptr) return out;
  const CommandFlags* also = command == "tune" ? Find("train") : nullptr;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    // Set: its value is not its default (this Abseil keeps "specified on
    // the command line" private; a flag given its default changes nothing).
    if (!IsEmberFlag(*flag) || flag->CurrentValue() == flag->DefaultValue()) continue;
    const std::string_view n(name.data(), name.size());
    if (Reads(*entry, kind, n, *flag) || (also != nullptr && Reads(*also, "", n, *flag))) continue;
    std::string dashed = absl::StrCat("--", std::string(n));
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    out.push_back(std::move(dashed));
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> FlagsReadBy(std::string_view command) {
  std::vector<std::string> out;
  const CommandFlags* entry = Find(command);
  if (entry == nullptr) return out;
  const CommandFlags* also = command == "tune" ? Find("train") : nullptr;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!IsEmberFlag(*flag)) continue;
    const std::string_view n(name.data(), name.size());
    if (Reads(*entry, "", n, *flag) || (also != nullptr && Reads(*also, "", n, *flag))) {
      out.emplace_back(n);
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

namespace {

// Edit distance (insertions, deletions, substitutions), for suggestions.
size_t EditDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] != b[j - 1] ? 1 : 0)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::vector<std::string> NearestFlags(std::string_view command, std::string_view name) {
  std::string wanted(name);
  std::replace(wanted.begin(), wanted.end(), '-', '_');
  std::vector<std::pair<size_t, std::string>> scored;
  for (const std::string& flag : FlagsReadBy(command)) {
    size_t d = EditDistance(wanted, flag);
    // A name that is the start of a flag, or the flag the start of it
    // (--epoch, --epochs-total), counts as one edit away.
    if (flag.starts_with(wanted) || wanted.starts_with(flag)) d = std::min<size_t>(d, 1);
    if (d <= std::max<size_t>(2, wanted.size() / 3)) scored.emplace_back(d, flag);
  }
  std::sort(scored.begin(), scored.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < 3; ++i) {
    std::string dashed = absl::StrCat("--", scored[i].second);
    std::replace(dashed.begin(), dashed.end(), '_', '-');
    out.push_back(std::move(dashed));
  }
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
      shown = Reads(*entry, "", std::string_view(name.data(), name.size()), *flag);
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
