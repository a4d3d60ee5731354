#include "train/options/train_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

// The evaluation of `validation` before the run's seed and threads are set.
EvalOptions EvalOptionsOf(const ValidationOptions& validation) {
  EvalOptions eo;
  eo.split = Split::kValid;
  eo.negatives = validation.negatives;
  eo.max_edges = validation.max_edges;
  eo.edge_rr = validation.edge_rr;
  return eo;
}

}  // namespace

EvalOptions ValidationEvalOptions(const TrainOptions& options) {
  EvalOptions eo = EvalOptionsOf(options.validation);
  eo.seed = options.seed;
  eo.threads = options.devices.threads;
  return eo;
}

absl::Status OptimizerOptions::Validate() const {
  if (!(lr > 0)) return absl::InvalidArgumentError("--lr must be > 0");
  if (!(relation_lr_scale > 0) || std::isinf(relation_lr_scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--relation-lr-scale must be finite and > 0, got ", relation_lr_scale));
  }
  return absl::OkStatus();
}

absl::Status PipelineOptions::Validate() const {
  if (batch_size < 1) return absl::InvalidArgumentError("--batch-size must be >= 1");
  if (chunk_size < 1) return absl::InvalidArgumentError("--chunk-size must be >= 1");
  if (num_uniform_negs < 0) return absl::InvalidArgumentError("--num-uniform-negs must be >= 0");
  return absl::OkStatus();
}

absl::Status ScheduleOptions::Validate() const {
  if (memory_budget == 0) return absl::InvalidArgumentError("--memory-budget must be > 0");
  return absl::OkStatus();
}

absl::Status DeviceOptions::Validate() const {
  if (threads < 1) {
    return absl::InvalidArgumentError("threads must be >= 1 (resolved by the caller)");
  }
  if (list.empty() && (trainers < 1 || trainers > threads)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--trainers ", trainers, " must be between 1 and --threads (", threads, ")"));
  }
  return absl::OkStatus();
}

absl::Status ValidationOptions::Validate() const {
  if (!enabled) return absl::OkStatus();
  return EvalOptionsOf(*this).Validate();
}

absl::Status TrainOptions::Validate() const {
  RETURN_IF_ERROR(model.Validate());
  RETURN_IF_ERROR(optimizer.Validate());
  RETURN_IF_ERROR(pipeline.Validate());
  RETURN_IF_ERROR(schedule.Validate());
  RETURN_IF_ERROR(devices.Validate());
  RETURN_IF_ERROR(validation.Validate());
  if (epochs < 0) return absl::InvalidArgumentError("--epochs must be >= 0");
  if (!(rank_timeout_seconds > 0)) {
    return absl::InvalidArgumentError("--rank-timeout must be > 0 seconds");
  }
  if (!(edge_sample > 0 && edge_sample <= 1)) {
    return absl::InvalidArgumentError("the edge sample share must be in (0, 1]");
  }
  if (in_memory && (!from_scratch || schedule.checkpoint_every > 0 ||
                    hooks.stop_after_buckets > 0 || only_new_edges || optimizer.lr_auto)) {
    return absl::InvalidArgumentError(
        "an in-memory run starts from scratch and takes no checkpoints, stop, "
        "--only-new-edges or --lr auto");
  }
  return absl::OkStatus();
}

}  // namespace ember
