#include "tools/cli/eval_flags.h"

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"
#include "tools/cli/common_flags.h"
#include "train/options/train_options.h"

// Defined by `ember import` (split fractions there); `ember eval` reads it as
// the split to evaluate. Its import default "1" is not a split name and
// means "test".
ABSL_DECLARE_FLAG(std::string, split);

namespace ember::tools {
namespace {

// `ember eval`'s default sample: with 10,000 edges the 95 % interval of MRR
// is at most ±0.0098 (1.96 · 0.5 / √10000, the per-edge values lying in
// [0, 1]), and the cost stays that of one batch streaming every partition
// once.
constexpr uint64_t kDefaultEvalEdges = 10000;

}  // namespace

bool AbslParseFlag(absl::string_view text, EvalNegatives* out, std::string* error) {
  if (text == "all") {
    out->value = 0;
    return true;
  }
  uint64_t n = 0;
  if (!absl::SimpleAtoi(text, &n) || n == 0 || n > (uint64_t{1} << 31)) {
    *error = "expected all (rank against every node) or a number of sampled "
             "negatives in [1, 2^31]";
    return false;
  }
  out->value = n;
  return true;
}

std::string AbslUnparseFlag(const EvalNegatives& n) {
  return n.value == 0 ? "all" : absl::StrCat(n.value);
}

absl::StatusOr<EvalOptions> EvalOptionsFromFlags() {
  EvalOptions options;
  const std::string split = absl::GetFlag(FLAGS_split);
  if (split == "test" || split == "1" || split.empty()) {
    options.split = Split::kTest;
  } else if (split == "valid") {
    options.split = Split::kValid;
  } else if (split == "train") {
    options.split = Split::kTrain;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--split takes test, valid or train, got \"", split, "\""));
  }
  options.negatives = absl::GetFlag(FLAGS_negatives).value;
  options.max_edges = absl::GetFlag(FLAGS_max_edges);
  options.seed = absl::GetFlag(FLAGS_seed);
  options.threads = ThreadCount();
  options.by_relation = absl::GetFlag(FLAGS_by_relation);
  ASSIGN_OR_RETURN(options.memory_budget, MemoryBudget());
  RETURN_IF_ERROR(options.Validate());
  return options;
}

}  // namespace ember::tools

ABSL_FLAG(ember::tools::EvalNegatives, negatives, ember::tools::EvalNegatives{},
          "eval: candidates per query: all (every node of the graph, filtered) or N "
          "(N uniformly sampled nodes shared per batch of edges, plus the true one; "
          "optimistic, since they rarely include the hard negatives).");
ABSL_FLAG(uint64_t, max_edges, ember::tools::kDefaultEvalEdges,
          "eval: rank a seeded sample (--seed) of this many edges of the split "
          "(all of them when the split is smaller); 0 = every edge.");
ABSL_FLAG(bool, by_relation, false,
          "eval: also report filtered MRR and Hits@1/10 per relation.");
ABSL_FLAG(ember::tools::EvalNegatives, eval_negatives,
          ember::tools::EvalNegatives{ember::TrainOptions{}.validation.negatives},
          "train --eval-valid: candidates per query, all or N sampled negatives "
          "(optimistic).");
ABSL_FLAG(uint64_t, eval_max_edges, ember::TrainOptions{}.validation.max_edges,
          "train --eval-valid: valid edges ranked after each epoch, a seeded sample "
          "(the same every epoch); 0 = every valid edge.");
