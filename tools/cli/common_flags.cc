#include "tools/cli/common_flags.h"

#include <cmath>
#include <cstdio>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "partition/importer.h"
#include "partition/train_memory.h"
#include "train/blas/blas_startup.h"
#include "train/model/model_options.h"

ABSL_FLAG(std::string, out, "", "Output path (graph directory or file).");
ABSL_FLAG(uint64_t, seed, 0, "Random seed; the same seed gives the same result.");
ABSL_FLAG(int, threads, 0, "Worker threads; 0 = all hardware threads.");
ABSL_FLAG(bool, overwrite, false, "Replace an existing output.");
ABSL_FLAG(bool, json, false, "Print results as JSON on stdout.");
ABSL_FLAG(ember::tools::PartitionCount, partitions, ember::tools::PartitionCount{},
          "Number of node partitions P (1 to 4096), or auto: the fewest that "
          "`ember train --memory-budget` at --dim can train with.");
ABSL_FLAG(bool, quiet, false, "No progress output.");
ABSL_FLAG(bool, verbose, false,
          "Also print what the run is built on: the GEMM backend, its kernel and threads.");
ABSL_FLAG(std::string, relations_out, "",
          "export: also write relation parameters (name<TAB>p1..pk) here (not with h5, whose "
          "meta.json holds them); "
          "gen kg: write one name<TAB>kind<TAB>partner line per relation here.");
ABSL_FLAG(ember::tools::ProgressInterval, progress_interval, ember::tools::ProgressInterval{},
          "Seconds between progress lines when stderr is not a terminal (a log); 0: a line "
          "at every update. On a terminal one line is redrawn in place.");
ABSL_FLAG(ember::tools::CutOffs, k, ember::tools::CutOffs{},
          "Results per query (neighbors, recommend); cut-offs of eval --protocol recommend.");
ABSL_FLAG(std::string, type, "",
          "Only the nodes of this type of a typed graph (export, neighbors); empty: every "
          "node.");
ABSL_FLAG(std::string, relation, "",
          "The relation whose operator scores a query (neighbors, recommend, eval --protocol "
          "recommend); neighbors on a --reciprocal model also takes NAME_inv: what links to "
          "NODE through NAME.");
ABSL_FLAG(int, dim, ember::ModelOptions{}.dim,
          "Embedding dimension (train); import --partitions auto: the --dim "
          "you will train with.");

namespace ember::tools {

bool AbslParseFlag(absl::string_view text, PartitionCount* out, std::string* error) {
  if (text == "auto") {
    out->value = 0;
    return true;
  }
  uint32_t p = 0;
  if (!absl::SimpleAtoi(text, &p) || p < 1 || p > kMaxAutoPartitions) {
    *error = absl::StrCat("expected a partition count in [1, ", kMaxAutoPartitions,
                          "] or auto");
    return false;
  }
  out->value = p;
  return true;
}

bool AbslParseFlag(absl::string_view text, CutOffs* out, std::string* error) {
  CutOffs k;
  k.values.clear();
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    uint32_t v = 0;
    if (!absl::SimpleAtoi(part, &v) || v < 1 || v > (1u << 20)) {
      *error = "expected a count in [1, 2^20], or a comma list of them (10,20,100)";
      return false;
    }
    k.values.push_back(v);
  }
  *out = std::move(k);
  return true;
}

std::string AbslUnparseFlag(const CutOffs& k) { return absl::StrJoin(k.values, ","); }

std::string AbslUnparseFlag(const PartitionCount& p) {
  return p.value == 0 ? "auto" : absl::StrCat(p.value);
}

bool AbslParseFlag(absl::string_view text, ProgressInterval* out, std::string* error) {
  double seconds = 0;
  if (!absl::SimpleAtod(text, &seconds) || !(seconds >= 0) || std::isinf(seconds)) {
    *error = "expected a number of seconds >= 0";
    return false;
  }
  out->seconds = seconds;
  return true;
}

std::string AbslUnparseFlag(const ProgressInterval& p) { return absl::StrCat(p.seconds); }

std::vector<Split> ExcludedSplits(ExcludeKnown e) {
  switch (e) {
    case ExcludeKnown::kAll:
      return {kAllSplits.begin(), kAllSplits.end()};
    case ExcludeKnown::kTrain:
      return {Split::kTrain};
    case ExcludeKnown::kNone:
      break;
  }
  return {};
}

void PrintGemmStart(std::string_view detail) {
  PrintBlasWarning();
  if (absl::GetFlag(FLAGS_verbose)) {
    std::fprintf(stderr, "%s%.*s\n", BlasLine().c_str(), static_cast<int>(detail.size()),
                 detail.data());
  }
}

ProgressPrinter ProgressFromFlags() {
  return ProgressPrinter(!absl::GetFlag(FLAGS_quiet),
                         absl::GetFlag(FLAGS_progress_interval).seconds);
}

absl::StatusOr<uint64_t> MemoryBudget() {
  return ParseByteSize(absl::GetFlag(FLAGS_memory_budget));
}

double FloatFlagDefault(float value) {
  double out = value;
  // StrCat writes a float in at most 6 significant digits, enough for the
  // defaults of options; one that needs more keeps its exact value.
  if (!absl::SimpleAtod(absl::StrCat(value), &out) || static_cast<float>(out) != value) {
    return value;
  }
  return out;
}

absl::Status UnknownRelation(const std::string& name, const std::string& dir,
                             const std::vector<std::string>& relations) {
  return absl::NotFoundError(absl::StrCat("no relation '", name, "' in ", dir, " (its relations: ",
                                          absl::StrJoin(relations, ", "), ")"));
}

int ThreadCount() {
  int t = absl::GetFlag(FLAGS_threads);
  if (t > 0) return t;
  unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

}  // namespace ember::tools
