// Tests only (`ember train --test-kill-at RANK:STEP[:NTH]`): a rank that
// kills itself with SIGKILL right after a step of a checkpoint into own
// copies (TrainOptions::rank_copies), so that a kill at each step of the
// two-phase protocol can be tested across real processes under mpirun
// (tests/tools/mpi_train_test.sh), where an outside kill could not choose
// its moment. It reaches a run through TrainOptions::hooks.checkpoint_step.
#ifndef EMBER_TOOLS_BENCH_HOOKS_KILLED_RANK_H_
#define EMBER_TOOLS_BENCH_HOOKS_KILLED_RANK_H_

#include <cstdint>
#include <functional>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "train/options/train_options.h"

namespace ember {

struct RankKill {
  uint32_t rank = 0;
  CheckpointStep step = CheckpointStep::kShareWritten;
  uint32_t nth = 1;  // the nth checkpoint of the run (>= 1)
};

// Parses "RANK:STEP" or "RANK:STEP:NTH", STEP one of written,
// rank0-committed, committed. InvalidArgument naming `text` otherwise.
absl::StatusOr<RankKill> ParseRankKill(std::string_view text);

// The hook that kills this process (SIGKILL) when rank `kill.rank` has
// finished `kill.step` of its nth checkpoint; OK at every other step.
// `die` stands for raise(SIGKILL) (tests pass their own).
std::function<absl::Status(uint32_t, CheckpointStep)> KillRankHook(
    const RankKill& kill, std::function<void()> die = nullptr);

}  // namespace ember

#endif  // EMBER_TOOLS_BENCH_HOOKS_KILLED_RANK_H_
