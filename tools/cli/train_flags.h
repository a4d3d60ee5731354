// The flags of `ember train` as TrainOptions, for the commands that train
// (train, tune). Defined in cmd_train.cc, beside the flags.
#ifndef EMBER_TOOLS_CLI_TRAIN_FLAGS_H_
#define EMBER_TOOLS_CLI_TRAIN_FLAGS_H_

#include "absl/status/statusor.h"
#include "train/options/train_options.h"

namespace ember::tools {

// TrainOptions from the current flag values (threads resolved), validated.
absl::StatusOr<TrainOptions> TrainOptionsFromFlags();

// InvalidArgument when --reg-weight was given and `o` has no regularizer
// (after a resumed run adopted its checkpoint's, tools/cli/cmd_train.cc).
absl::Status CheckRegWeightFlag(const TrainOptions& o);

}  // namespace ember::tools

#endif  // EMBER_TOOLS_CLI_TRAIN_FLAGS_H_
