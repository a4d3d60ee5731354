#include "train/options/train_options.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"

namespace ember {

EvalOptions ValidationOptions(const TrainOptions& options) {
  EvalOptions eo;
  eo.split = Split::kValid;
  eo.negatives = options.eval_negatives;
  eo.max_edges = options.eval_max_edges;
  eo.seed = options.seed;
  eo.threads = options.threads;
  return eo;
}

absl::Status TrainOptions::Validate() const {
  RETURN_IF_ERROR(model.Validate());
  if (epochs < 0) return absl::InvalidArgumentError("--epochs must be >= 0");
  if (!(lr > 0)) return absl::InvalidArgumentError("--lr must be > 0");
  if (!(relation_lr_scale > 0) || std::isinf(relation_lr_scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--relation-lr-scale must be finite and > 0, got ", relation_lr_scale));
  }
  if (batch_size < 1) return absl::InvalidArgumentError("--batch-size must be >= 1");
  if (!(rank_timeout_seconds > 0)) {
    return absl::InvalidArgumentError("--rank-timeout must be > 0 seconds");
  }
  if (chunk_size < 1) return absl::InvalidArgumentError("--chunk-size must be >= 1");
  if (num_uniform_negs < 0) return absl::InvalidArgumentError("--num-uniform-negs must be >= 0");
  if (threads < 1) return absl::InvalidArgumentError("threads must be >= 1 (resolved by the caller)");
  if (memory_budget == 0) return absl::InvalidArgumentError("--memory-budget must be > 0");
  if (!(edge_sample > 0 && edge_sample <= 1)) {
    return absl::InvalidArgumentError("the edge sample share must be in (0, 1]");
  }
  if (eval_valid) RETURN_IF_ERROR(ValidationOptions(*this).Validate());
  if (bench_slow_trainer.trainer < -1 ||
      (bench_slow_trainer.active() &&
       !(bench_slow_trainer.factor >= 1 && std::isfinite(bench_slow_trainer.factor)))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--bench-slow-trainer: needs a trainer index >= 0 and a factor >= 1, got ",
        bench_slow_trainer.trainer, ":", bench_slow_trainer.factor));
  }
  if (in_memory && (!from_scratch || checkpoint_every > 0 || stop_after_buckets > 0 ||
                    only_new_edges || lr_auto)) {
    return absl::InvalidArgumentError(
        "an in-memory run starts from scratch and takes no checkpoints, stop, "
        "--only-new-edges or --lr auto");
  }
  if (devices.empty() && (trainers < 1 || trainers > threads)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--trainers ", trainers, " must be between 1 and --threads (", threads, ")"));
  }
  return absl::OkStatus();
}

}  // namespace ember
