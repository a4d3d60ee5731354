#include "train/distributed/epoch_model.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"

namespace ember {

uint64_t BusiestRankMoves(const RankSchedule& schedule) {
  std::vector<uint64_t> moves(schedule.world_size, 0);
  for (const GlobalRound& g : schedule.rounds) {
    for (const Transfer& t : g.transfers) {
      if (t.overlapped && g.index > 0) continue;  // hidden behind the round before
      ++moves[t.from];
      ++moves[t.to];
    }
  }
  return moves.empty() ? 0 : *std::max_element(moves.begin(), moves.end());
}

EpochPrediction PredictEpoch(const EpochMeasure& m, const RankSchedule& schedule) {
  EpochPrediction p;
  p.ranks = schedule.world_size;
  p.rounds = schedule.rounds.size();
  p.moves_busiest_rank = BusiestRankMoves(schedule);
  const double rate = m.train_seconds > 0 ? m.train_edges / (m.ranks * m.train_seconds) : 0;
  p.train_seconds = rate > 0 ? m.train_edges / (p.ranks * rate) : 0;
  const double bandwidth = m.transfer_seconds > 0 && m.bytes_at_boundary > 0
                               ? (m.bytes_at_boundary / double(m.ranks)) / m.transfer_seconds
                               : 1e9;
  p.transfer_seconds = p.moves_busiest_rank * double(m.partition_bytes) / bandwidth;
  // Each round costs one sum of the relation parameters, whatever N.
  p.sync_seconds = m.rounds > 0 ? p.rounds * (m.sync_seconds / m.rounds) : 0;
  // Through rank 0 a checkpoint writes the whole model whatever N; into
  // own copies, each rank about 1/N of it, at once.
  p.checkpoint_seconds = m.checkpoint_per_rank && p.ranks > 0
                             ? m.checkpoint_seconds * m.ranks / p.ranks
                             : m.checkpoint_seconds;
  return p;
}

std::string DescribePrediction(const EpochMeasure& m, const EpochPrediction& now,
                               const EpochPrediction& doubled) {
  const double rate = m.train_seconds > 0 ? m.train_edges / (m.ranks * m.train_seconds) : 0;
  const double bandwidth = m.transfer_seconds > 0 && m.bytes_at_boundary > 0
                               ? (m.bytes_at_boundary / double(m.ranks)) / m.transfer_seconds
                               : 0;
  const uint64_t moved = m.bytes_at_boundary + m.bytes_overlapped;
  std::string out = absl::StrFormat(
      "across %u ranks: %.0f edges/s per rank while training; %.1f MB of partitions moved, "
      "%.0f %% of it while the round before trained, the rest at %.1f MB/s per rank; "
      "predicted epoch %.2f s at %u ranks (train %.2f, moves %.2f, sums %.2f, "
      "checkpoint %.2f), %.2f s at %u ranks",
      m.ranks, rate, moved / 1e6, moved > 0 ? 100.0 * m.bytes_overlapped / moved : 0.0,
      bandwidth / 1e6, now.total(), now.ranks, now.train_seconds,
      now.transfer_seconds, now.sync_seconds, now.checkpoint_seconds, doubled.total(),
      doubled.ranks);
  if (m.checkpoint_bytes > 0) {
    absl::StrAppendFormat(&out,
                          "; checkpoints wrote %.1f MB, %.1f MB (%.0f %%) of it through rank 0",
                          m.checkpoint_bytes / 1e6, m.checkpoint_bytes_rank0 / 1e6,
                          100.0 * m.checkpoint_bytes_rank0 / m.checkpoint_bytes);
  }
  if (doubled.total() > 0.8 * now.total()) {
    absl::StrAppendFormat(&out,
                          "\nwarning: %u ranks would save less than 20 %% of an epoch here "
                          "(moves, sums and checkpoints through rank 0 do not shrink with more "
                          "ranks)",
                          doubled.ranks);
  }
  return out;
}

}  // namespace ember
