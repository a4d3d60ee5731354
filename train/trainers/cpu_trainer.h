// The CPU trainer: the reference Trainer. Each batch is cut into chunks
// (mixed relations or one relation each, TrainOptions::pipeline.relation_batching),
// scored against in-chunk and uniform negatives with GEMMs
// (chunk_scorer), and its rows are updated in place with row-wise Adagrad,
// lock-free across the threads that call TrainBatch (Hogwild). Relation
// parameters are updated under a mutex. Featurized models compose each
// node's row from its id row and feature rows (featurized.h) and send
// gradients back to both. Rows live in host memory: its RowResidency calls
// are no-ops.
#ifndef EMBER_TRAIN_TRAINERS_CPU_TRAINER_H_
#define EMBER_TRAIN_TRAINERS_CPU_TRAINER_H_

#include <memory>

#include "absl/status/statusor.h"
#include "train/trainers/trainer.h"

namespace ember {

// A CPU trainer for `threads` concurrent batches. `features` is the feature
// table shared by all trainers of a featurized model (null otherwise); it
// must outlive the trainer.
absl::StatusOr<std::unique_ptr<Trainer>> MakeCpuTrainer(const TrainOptions& options, int threads,
                                                        const RelationParams& relations,
                                                        FeatureTable* features);

}  // namespace ember

#endif  // EMBER_TRAIN_TRAINERS_CPU_TRAINER_H_
