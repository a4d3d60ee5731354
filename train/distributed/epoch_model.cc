#include "train/distributed/epoch_model.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"
#include "train/distributed/checkpoint_writers.h"

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

namespace {

// B: a partition per move step, over the time waited for them; 0 when
// nothing was waited for.
double LinkBandwidth(const EpochMeasure& m) {
  return m.transfer_seconds > 0 && m.schedule.move_steps > 0
             ? m.schedule.move_steps * double(m.partition_bytes) / m.transfer_seconds
             : 0;
}

}  // namespace

ScheduleCosts CostsOf(const RankSchedule& schedule) {
  const uint32_t n = schedule.world_size;
  ScheduleCosts c;
  c.rounds = schedule.rounds.size();
  c.moves_busiest_rank = BusiestRankMoves(schedule);
  double critical_edges = 0, all_edges = 0;
  std::vector<uint64_t> sends(n), receives(n), edges(n);
  for (const GlobalRound& g : schedule.rounds) {
    std::fill(sends.begin(), sends.end(), 0);
    std::fill(receives.begin(), receives.end(), 0);
    std::fill(edges.begin(), edges.end(), 0);
    for (const Transfer& t : g.transfers) {
      if (t.overlapped && g.index > 0) continue;
      ++sends[t.from];
      ++receives[t.to];
    }
    for (const RankBucket& b : g.buckets) edges[b.rank] += b.edges;
    for (uint32_t r = 0; r < n; ++r) c.move_steps += std::max(sends[r], receives[r]) / double(n);
    if (n > 0) critical_edges += *std::max_element(edges.begin(), edges.end());
    for (uint64_t e : edges) all_edges += e;
  }
  c.critical_share = all_edges > 0 ? critical_edges / all_edges : 0;
  if (schedule.final_holders.size() == schedule.num_partitions && n > 0) {
    // Hand-offs go pair by pair in partition order, each holding its two
    // ranks until done (HandOffForWriting): each ends one move after both
    // ranks are free.
    const std::vector<uint32_t> writers = BalancedWriters(schedule.final_holders, n);
    std::vector<uint64_t> free_after(n, 0);
    for (uint32_t p = 0; p < writers.size(); ++p) {
      const uint32_t holder = schedule.final_holders[p];
      if (writers[p] == holder) continue;
      free_after[holder] = free_after[writers[p]] =
          std::max(free_after[holder], free_after[writers[p]]) + 1;
    }
    c.handoff_moves = *std::max_element(free_after.begin(), free_after.end());
    c.largest_share = LargestShare(writers, n);
  }
  return c;
}

EpochPrediction PredictEpoch(const EpochMeasure& m, const RankSchedule& schedule) {
  const ScheduleCosts c = CostsOf(schedule);
  EpochPrediction p;
  p.ranks = schedule.world_size;
  p.rounds = c.rounds;
  p.moves_busiest_rank = c.moves_busiest_rank;
  const double rate = m.train_seconds > 0 ? m.train_edges / (m.ranks * m.train_seconds) : 0;
  p.train_seconds = rate > 0 ? m.train_edges * c.critical_share / rate : 0;
  const double measured = LinkBandwidth(m);
  const double bandwidth = measured > 0 ? measured : 1e9;
  p.transfer_seconds = c.move_steps * double(m.partition_bytes) / bandwidth;
  // Each round costs one sum of the relation parameters, whatever N.
  p.sync_seconds = m.rounds > 0 ? p.rounds * (m.sync_seconds / m.rounds) : 0;
  if (m.checkpoint_per_rank) {
    // A hand-off at the rate measured for them, or at B.
    const double handoffs =
        m.schedule.handoff_moves > 0
            ? m.checkpoint_handoff_seconds * c.handoff_moves / m.schedule.handoff_moves
            : c.handoff_moves * double(m.partition_bytes) / bandwidth;
    const double write =
        m.schedule.largest_share > 0
            ? m.checkpoint_write_seconds * c.largest_share / m.schedule.largest_share
            : 0;
    const double rest = std::max(
        0.0, m.checkpoint_seconds - m.checkpoint_handoff_seconds - m.checkpoint_write_seconds);
    p.checkpoint_seconds = handoffs + write + rest;
  } else {
    // Through rank 0 a checkpoint writes the whole model whatever N.
    p.checkpoint_seconds = m.checkpoint_seconds;
  }
  return p;
}

std::string DescribePrediction(const EpochMeasure& m, const EpochPrediction& now,
                               const EpochPrediction& doubled) {
  const double rate = m.train_seconds > 0 ? m.train_edges / (m.ranks * m.train_seconds) : 0;
  const double bandwidth = LinkBandwidth(m);
  const uint64_t moved = m.bytes_at_boundary + m.bytes_overlapped;
  std::string out = absl::StrFormat(
      "across %u ranks: %.0f edges/s per rank while training; %.1f MB of partitions moved, "
      "%.0f %% of it while the round before trained, the rest at %.1f MB/s per link; "
      "predicted epoch %.2f s at %u ranks (train %.2f, moves %.2f, sums %.2f, "
      "checkpoint %.2f), %.2f s at %u ranks",
      m.ranks, rate, moved / 1e6, moved > 0 ? 100.0 * m.bytes_overlapped / moved : 0.0,
      bandwidth / 1e6, now.total(), now.ranks, now.train_seconds, now.transfer_seconds,
      now.sync_seconds, now.checkpoint_seconds, doubled.total(), doubled.ranks);
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
