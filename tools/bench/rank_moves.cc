// What the computed rank schedule (train/distributed/rank_schedule.h) moves
// in an epoch, for P partitions of equal size over N ranks of one trainer:
// partition moves in model copies (moves / P), the busiest rank's moves at
// round boundaries, the share of moves that travel while the round before
// trains, rounds, the mean rank's move steps and the share of the edges on
// the critical path (the cost model's units, epoch_model.h). Pure arithmetic on the schedule: no
// training, no timing. Feeds the cost model's table in docs/distributed.md. Usage: rank_moves
// [--order inside-out|beta|sequential|random]
#include <cstdio>
#include <cstring>
#include <string>

#include "train/distributed/epoch_model.h"
#include "train/distributed/rank_schedule.h"

int main(int argc, char** argv) {
  ember::BucketOrderKind order = ember::BucketOrderKind::kInsideOut;
  if (argc == 3 && std::strcmp(argv[1], "--order") == 0) {
    auto parsed = ember::ParseBucketOrderKind(argv[2]);
    if (!parsed.ok()) {
      std::fprintf(stderr, "rank_moves: %s\n", std::string(parsed.status().message()).c_str());
      return 2;
    }
    order = *parsed;
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: rank_moves [--order KIND]\n");
    return 2;
  }
  std::printf("%4s %4s %8s %14s %18s %8s %12s %14s\n", "P", "N", "rounds", "model copies",
              "busiest rank moves", "hidden", "move steps", "critical share");
  for (uint32_t P : {8u, 16u, 32u, 64u}) {
    for (uint32_t N : {2u, 4u, 8u, 16u}) {
      if (N > P) continue;
      ember::RankScheduleOptions o;
      o.num_partitions = P;
      o.world_size = N;
      o.order = order;
      o.seed = 1;
      o.bucket_edges.assign(uint64_t{P} * P, 1000);
      auto s = ember::ComputeRankSchedule(o);
      if (!s.ok()) {
        std::fprintf(stderr, "rank_moves: %s\n", std::string(s.status().message()).c_str());
        return 1;
      }
      uint64_t moves = 0, hidden = 0;
      for (const ember::GlobalRound& g : s->rounds) {
        for (const ember::Transfer& t : g.transfers) {
          ++moves;
          hidden += t.overlapped && g.index > 0;
        }
      }
      const ember::ScheduleCosts c = ember::CostsOf(*s);
      std::printf("%4u %4u %8zu %14.2f %18llu %7.0f%% %12.1f %14.3f\n", P, N, s->rounds.size(),
                  double(moves) / P, (unsigned long long)c.moves_busiest_rank,
                  moves ? 100.0 * hidden / moves : 0.0, c.move_steps, c.critical_share);
    }
  }
  return 0;
}
