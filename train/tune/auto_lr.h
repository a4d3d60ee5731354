// `ember train --lr auto`: training whose step size is chosen by probes
// (ChooseLr, probe.h) before the run. Sits above the training loop, which
// knows only an LrChooser.
#ifndef EMBER_TRAIN_TUNE_AUTO_LR_H_
#define EMBER_TRAIN_TUNE_AUTO_LR_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "train/options/train_options.h"
#include "train/train_loop.h"
#include "train/tune/probe.h"

namespace ember {

struct AutoLrTrainSummary : TrainSummary {
  // With lr_auto on a fresh run with validation edges: the probes.
  std::optional<LrChoice> lr_choice;
};

// TrainGraph with ChooseLr as its LrChooser. Without options.optimizer.lr_auto it is
// TrainGraph.
absl::StatusOr<AutoLrTrainSummary> TrainGraphAutoLr(const std::string& graph_dir,
                                                    const TrainOptions& options);

}  // namespace ember

#endif  // EMBER_TRAIN_TUNE_AUTO_LR_H_
