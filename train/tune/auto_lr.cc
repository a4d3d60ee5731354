#include "train/tune/auto_lr.h"

#include <utility>

#include "storage/base/status_macros.h"

namespace ember {

absl::StatusOr<AutoLrTrainSummary> TrainGraphAutoLr(const std::string& graph_dir,
                                                    const TrainOptions& options) {
  std::optional<LrChoice> choice;
  const LrChooser choose = [&choice](Graph& graph,
                                     const TrainOptions& o) -> absl::StatusOr<float> {
    ASSIGN_OR_RETURN(choice, ChooseLr(graph, o));
    return choice->lr;
  };
  AutoLrTrainSummary out;
  ASSIGN_OR_RETURN(static_cast<TrainSummary&>(out), TrainGraph(graph_dir, options, choose));
  out.lr_choice = std::move(choice);
  return out;
}

}  // namespace ember
