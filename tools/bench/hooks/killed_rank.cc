#include "tools/bench/hooks/killed_rank.h"

#include <csignal>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace ember {

absl::StatusOr<RankKill> ParseRankKill(std::string_view text) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(text.data(), text.size()), ':');
  RankKill kill;
  bool ok = (parts.size() == 2 || parts.size() == 3) && absl::SimpleAtoi(parts[0], &kill.rank);
  if (ok && parts[1] == "written") {
    kill.step = CheckpointStep::kShareWritten;
  } else if (ok && parts[1] == "rank0-committed") {
    kill.step = CheckpointStep::kRankZeroCommitted;
  } else if (ok && parts[1] == "committed") {
    kill.step = CheckpointStep::kCommitted;
  } else {
    ok = false;
  }
  if (ok && parts.size() == 3) ok = absl::SimpleAtoi(parts[2], &kill.nth) && kill.nth >= 1;
  if (!ok) {
    return absl::InvalidArgumentError(
        absl::StrCat("--test-kill-at ", absl::string_view(text.data(), text.size()),
                     ": want RANK:STEP[:NTH], STEP one of written, rank0-committed, committed, "
                     "NTH >= 1"));
  }
  return kill;
}

std::function<absl::Status(uint32_t, CheckpointStep)> KillRankHook(const RankKill& kill,
                                                                   std::function<void()> die) {
  if (!die) die = [] { std::raise(SIGKILL); };
  // One rank per process under mpirun; the count is this process's.
  auto seen = std::make_shared<uint32_t>(0);
  return [kill, die, seen](uint32_t rank, CheckpointStep step) {
    if (rank == kill.rank && step == kill.step && ++*seen == kill.nth) die();
    return absl::OkStatus();
  };
}

}  // namespace ember
