// The flags that choose an evaluation protocol, shared by `ember eval`
// (--negatives, --max-edges) and `ember train --eval-valid`
// (--eval-negatives, --eval-max-edges).
#ifndef EMBER_TOOLS_CLI_EVAL_FLAGS_H_
#define EMBER_TOOLS_CLI_EVAL_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "train/eval/evaluator.h"

namespace ember::tools {

// Candidates per query: `all` (every node; held as 0) or N > 0 sampled
// negatives (EvalOptions::negatives).
struct EvalNegatives {
  uint64_t value = 0;  // 0: all
};
// Accepts `all` or a count in [1, 2^31]; abseil names the flag in the error.
bool AbslParseFlag(absl::string_view text, EvalNegatives* out, std::string* error);
std::string AbslUnparseFlag(const EvalNegatives& n);

// `ember eval`'s options from its flags (--split, --negatives, --max-edges,
// --seed, --threads, --by-relation). The protocol does not depend on the
// graph: by default a seeded sample of 10,000 edges ranked against all nodes.
absl::StatusOr<EvalOptions> EvalOptionsFromFlags();

}  // namespace ember::tools

ABSL_DECLARE_FLAG(ember::tools::EvalNegatives, negatives);
ABSL_DECLARE_FLAG(uint64_t, max_edges);
ABSL_DECLARE_FLAG(bool, by_relation);
ABSL_DECLARE_FLAG(ember::tools::EvalNegatives, eval_negatives);
ABSL_DECLARE_FLAG(uint64_t, eval_max_edges);

#endif  // EMBER_TOOLS_CLI_EVAL_FLAGS_H_
