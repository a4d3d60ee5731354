// `ember gather`: brings into one copy of a graph the partitions' rows that
// ranks training their own copies (TrainOptions::rank_copies) checkpointed
// into the others, so that eval, export, neighbors and one-process training
// may read it.
#ifndef EMBER_TRAIN_MODEL_GATHER_COPIES_H_
#define EMBER_TRAIN_MODEL_GATHER_COPIES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace ember {

struct GatherReport {
  uint32_t partitions = 0;  // partitions whose rows were copied into the graph
  uint64_t bytes = 0;       // their rows and optimizer state
};

// Copies into graph `dest` (opened read-write) every partition whose rows
// its committed checkpoint places in another rank's copy, from the copy of
// that rank among `copies` (opened read-only; copies of ranks whose rows
// `dest` has already may be given too), one partition at a time, then
// commits `dest`'s checkpoint as whole (no rows elsewhere). A `dest` that
// is whole already is left as it is (partitions 0). FailedPrecondition,
// naming the copy, when a copy holds another checkpoint or another graph,
// or when no copy of a rank whose rows are needed is given; nothing is
// committed then (rows copied before the error stay as unreferenced table
// versions, which the next read-write open of a trainer removes).
absl::StatusOr<GatherReport> GatherCopies(const std::string& dest,
                                          const std::vector<std::string>& copies);

}  // namespace ember

#endif  // EMBER_TRAIN_MODEL_GATHER_COPIES_H_
