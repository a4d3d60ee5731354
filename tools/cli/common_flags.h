// Flags shared by several subcommands. Subcommand-specific flags are defined
// in that subcommand's file.
#ifndef EMBER_TOOLS_CLI_COMMON_FLAGS_H_
#define EMBER_TOOLS_CLI_COMMON_FLAGS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "storage/base/enum_names.h"
#include "storage/base/progress.h"
#include "storage/types.h"

namespace ember::tools {
// The value of --partitions: a count P >= 1, or `auto` (held as 0).
struct PartitionCount {
  uint32_t value = 1;  // 0: auto
};
// Accepts a decimal count in [1, 4096] or `auto`; abseil names the flag
// in the error ("Illegal value 'x' specified for flag 'partitions'; ...").
bool AbslParseFlag(absl::string_view text, PartitionCount* out, std::string* error);
std::string AbslUnparseFlag(const PartitionCount& p);

// The value of --k: one count (neighbors, recommend) or a list of cut-offs
// (`eval --protocol recommend`), each in [1, 2^20].
struct CutOffs {
  std::vector<uint32_t> values{10};
};
bool AbslParseFlag(absl::string_view text, CutOffs* out, std::string* error);
std::string AbslUnparseFlag(const CutOffs& k);

// The value of --progress-interval: seconds >= 0.
struct ProgressInterval {
  double seconds = 10;
};
bool AbslParseFlag(absl::string_view text, ProgressInterval* out, std::string* error);
std::string AbslUnparseFlag(const ProgressInterval& p);

// The value of --exclude-known: which of a source's links are left out of
// its recommendations. `true` and `false` (and the bare `--exclude-known`
// and `--noexclude-known`, cli.cc) stand for all and none.
enum class ExcludeKnown : uint8_t { kAll = 0, kTrain = 1, kNone = 2 };
// The splits whose links `e` leaves out.
std::vector<Split> ExcludedSplits(ExcludeKnown e);
}  // namespace ember::tools

template <>
struct ember::EnumNames<ember::tools::ExcludeKnown> {
  static constexpr std::string_view kWhat = "--exclude-known value";
  // The first name of a value is the one printed.
  static constexpr EnumNameTable<tools::ExcludeKnown, 5> kTable = {{
      {tools::ExcludeKnown::kAll, "all"},
      {tools::ExcludeKnown::kTrain, "train"},
      {tools::ExcludeKnown::kNone, "none"},
      {tools::ExcludeKnown::kAll, "true"},
      {tools::ExcludeKnown::kNone, "false"},
  }};
};
namespace ember::tools {
using ::ember::AbslParseFlag;
using ::ember::AbslUnparseFlag;
}  // namespace ember::tools

ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(int, threads);
ABSL_DECLARE_FLAG(bool, overwrite);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(ember::tools::PartitionCount, partitions);
ABSL_DECLARE_FLAG(bool, quiet);
ABSL_DECLARE_FLAG(bool, verbose);
ABSL_DECLARE_FLAG(std::string, relations_out);
ABSL_DECLARE_FLAG(int, dim);
ABSL_DECLARE_FLAG(ember::tools::CutOffs, k);
ABSL_DECLARE_FLAG(std::string, relation);
// --type: export and neighbors.
ABSL_DECLARE_FLAG(std::string, type);
// Defined by recommend (cmd_recommend.cc); neighbors reads it too, only
// when given (FlagWasSet, cli.h).
ABSL_DECLARE_FLAG(ember::tools::ExcludeKnown, exclude_known);
ABSL_DECLARE_FLAG(ember::tools::ProgressInterval, progress_interval);
// Defined by import (cmd_import.cc); train, tune, eval, export and neighbors
// bound their memory by it too.
ABSL_DECLARE_FLAG(std::string, memory_budget);

namespace ember::tools {
// --threads, with 0 meaning "all hardware threads".
int ThreadCount();

// NotFound for a --relation `name` that graph `dir` lacks, listing the
// relations it has (`relations`), e.g. "no relation 'likes' in g (its
// relations: default)".
absl::Status UnknownRelation(const std::string& name, const std::string& dir,
                             const std::vector<std::string>& relations);
// A float option's default as the default of a double flag: the float's
// shortest decimal, so that --help shows 0.1 for 0.1f, not 0.100000001.
double FloatFlagDefault(float value);
// --memory-budget in bytes; ParseByteSize's error for a malformed value.
absl::StatusOr<uint64_t> MemoryBudget();
// Before a command's GEMMs: the GEMM start-up's warning, when the
// environment holds the kernel back (always, --quiet or not), and under
// --verbose the line naming the backend, kernel and threads, followed by
// `detail`.
void PrintGemmStart(std::string_view detail = "");
// Progress lines on stderr unless --quiet, every --progress-interval
// seconds when stderr is not a terminal.
ProgressPrinter ProgressFromFlags();
}  // namespace ember::tools

#endif  // EMBER_TOOLS_CLI_COMMON_FLAGS_H_
