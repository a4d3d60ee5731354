// The cost model (train/distributed/epoch_model.h) against a cluster of
// many ranks: one epoch of GRAPH trained by N ranks as threads of this
// process (InProcessCluster) with the real schedule, partition transport
// and own-copy checkpoint protocol, each rank on its own copy of the graph,
// its links and disk modelled by bandwidth (modelled_cluster.h). For each N
// it prints the busiest rank's moves at round boundaries, the time waiting
// for them, the epoch-end checkpoint's time and bytes (through rank 0 and
// the largest share), and the partition bytes through each rank, beside
// what the cost model predicts from the first N's measure.
//
// Training time is not compared: the ranks share this machine's cores, so a
// rank trains far slower than on a machine of its own. The modelled link
// and disk are what a cluster's ranks do not share; choose them slow
// enough that their time dominates the scheduling noise of many threads on
// few cores (the defaults do on 2 cores for tools/bench/cluster_sim.sh).
//
// Usage: cluster_sim GRAPH --ranks 16,64 [--link-mbps 10] [--disk-mbps 5]
//          [--sync-ms 2] [--dim 100] [--work DIR]
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/usage.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "rocksdb/env.h"
#include "storage/base/file_util.h"
#include "storage/base/status_macros.h"
#include "storage/manifest.h"
#include "tools/bench/modelled_cluster.h"
#include "train/distributed/cluster.h"
#include "train/distributed/epoch_model.h"
#include "train/distributed/rank_schedule.h"
#include "train/train_loop.h"

ABSL_FLAG(std::vector<std::string>, ranks, std::vector<std::string>({"16", "64"}),
          "rank counts to run; the first one's measure predicts the others");
ABSL_FLAG(double, link_mbps, 10, "each rank's link, MB/s each way");
ABSL_FLAG(double, disk_mbps, 5, "each rank's disk, MB/s");
ABSL_FLAG(double, sync_ms, 2, "one sync of a rank's disk, ms");
ABSL_FLAG(int, dim, 100, "embedding dimension");
ABSL_FLAG(std::string, work, "", "folder for the ranks' copies (default: beside GRAPH)");

namespace ember::bench {
namespace {

struct Run {
  uint32_t ranks = 0;
  EpochMeasure measure;
  double checkpoint_seconds = 0;  // rank 0's: the commit is its last step
  double wall_seconds = 0;
  std::vector<RankTraffic> links;
  std::vector<DiskTraffic> disks;
};

// Copies of `graph` at work/np<N>/copy.<r>, the ranks' own.
absl::StatusOr<std::vector<std::string>> MakeCopies(const std::string& graph,
                                                    const std::string& work, uint32_t n) {
  namespace fs = std::filesystem;
  const std::string base = absl::StrFormat("%s/np%u", work, n);
  std::error_code ec;
  fs::remove_all(base, ec);
  fs::create_directories(base, ec);
  if (ec) return absl::InternalError(absl::StrCat("cannot create ", base, ": ", ec.message()));
  std::vector<std::string> dirs;
  for (uint32_t r = 0; r < n; ++r) {
    dirs.push_back(absl::StrFormat("%s/copy.%u", base, r));
    fs::copy(graph, dirs.back(), fs::copy_options::recursive, ec);
    if (ec)
      return absl::InternalError(absl::StrCat("cannot copy to ", dirs.back(), ": ", ec.message()));
  }
  return dirs;
}

TrainOptions Options() {
  TrainOptions o;
  o.epochs = 1;
  o.model.dim = absl::GetFlag(FLAGS_dim);
  o.devices.threads = 1;
  o.devices.trainers = 1;
  o.rank_copies = true;
  o.from_scratch = true;
  return o;
}

absl::StatusOr<Run> TrainOnModelledCluster(const std::string& graph, const std::string& work,
                                           uint32_t n) {
  ASSIGN_OR_RETURN(const std::vector<std::string> dirs, MakeCopies(graph, work, n));
  // RocksDB flushes every open database's memtables on its default Env's
  // HIGH pool, one per process; each machine of a cluster has its own.
  rocksdb::Env::Default()->SetBackgroundThreads(static_cast<int>(n), rocksdb::Env::HIGH);
  ModelledDisks disks(dirs, absl::GetFlag(FLAGS_disk_mbps) * 1e6,
                      absl::GetFlag(FLAGS_sync_ms) / 1e3);
  Run run;
  run.ranks = n;
  std::vector<absl::StatusOr<TrainSummary>> out(n, absl::UnknownError("not run"));
  {
    ScopedFileSystem scoped(&disks);
    ASSIGN_OR_RETURN(std::unique_ptr<InProcessCluster> cluster, InProcessCluster::Create(n));
    ModelledLinks links(*cluster, n, absl::GetFlag(FLAGS_link_mbps) * 1e6);
    const TrainOptions options = Options();
    const auto start = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        out[r] = TrainGraphOnCluster(dirs[r], options, links.rank(r));
        if (!out[r].ok()) links.rank(r)->Abort(out[r].status());
      });
    }
    for (std::thread& t : threads) t.join();
    run.wall_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run.links = links.traffic();
  }
  run.disks = disks.traffic();
  for (uint32_t r = 0; r < n; ++r) {
    if (!out[r].ok()) return out[r].status();
  }
  const EpochStats& e = out[0]->epochs.at(0);
  if (!e.ranks_measure.has_value()) return absl::InternalError("no measure across ranks");
  run.measure = *e.ranks_measure;
  run.checkpoint_seconds = e.checkpoint_seconds;
  std::error_code ec;
  std::filesystem::remove_all(absl::StrFormat("%s/np%u", work, n), ec);
  return run;
}

// The schedule epoch 0 of a fresh run trains on `n` ranks, as the loop
// computes it (RankLayout::ComputeSchedule with the options above).
absl::StatusOr<RankSchedule> ScheduleFor(const Manifest& manifest, uint32_t n) {
  const TrainOptions options = Options();
  RankScheduleOptions o;
  o.seed = options.seed;
  o.epoch = 0;
  o.num_partitions = manifest.num_partitions;
  o.world_size = n;
  o.trainers_per_rank = 1;
  o.order = options.schedule.bucket_order;
  o.bucket_edges = manifest.train_bucket_edges;
  return ComputeRankSchedule(o);
}

template <typename T, typename F>
void MinMeanMax(const std::vector<T>& v, F value, double* lo, double* mean, double* hi) {
  *lo = 1e300, *hi = 0, *mean = 0;
  for (const T& x : v) {
    const double y = value(x);
    *lo = std::min(*lo, y), *hi = std::max(*hi, y), *mean += y / v.size();
  }
}

double ErrorPercent(double predicted, double measured) {
  return measured > 0 ? 100.0 * (predicted - measured) / measured : 0;
}

int Main(const std::string& graph, const std::string& work) {
  auto manifest = ReadManifest(graph + "/MANIFEST.json");
  if (!manifest.ok()) {
    std::fprintf(stderr, "cluster_sim: %s\n", std::string(manifest.status().message()).c_str());
    return 1;
  }
  std::vector<uint32_t> counts;
  for (const std::string& s : absl::GetFlag(FLAGS_ranks)) counts.push_back(std::stoul(s));
  uint64_t edges = 0;
  for (uint64_t e : manifest->train_bucket_edges) edges += e;
  std::printf(
      "%u partitions, %llu train edges, dim %d; per rank: link %.1f MB/s each way, "
      "disk %.1f MB/s, sync %.1f ms\n",
      manifest->num_partitions, (unsigned long long)edges, absl::GetFlag(FLAGS_dim),
      absl::GetFlag(FLAGS_link_mbps), absl::GetFlag(FLAGS_disk_mbps), absl::GetFlag(FLAGS_sync_ms));
  std::printf("%5s %6s | %13s | %15s | %15s | %9s %9s %8s | %21s | %6s\n", "ranks", "rounds",
              "moves meas/pr", "moves s meas/pr", "ckpt s meas/pr", "ckpt MB", "rank 0", "max",
              "link MB/rank min/avg/max", "wall s");
  std::optional<Run> first;
  for (uint32_t n : counts) {
    auto run = TrainOnModelledCluster(graph, work, n);
    if (!run.ok()) {
      std::fprintf(stderr, "cluster_sim: %u ranks: %s\n", n,
                   std::string(run.status().message()).c_str());
      return 1;
    }
    if (!first) first = *run;
    auto schedule = ScheduleFor(*manifest, n);
    if (!schedule.ok()) {
      std::fprintf(stderr, "cluster_sim: %s\n", std::string(schedule.status().message()).c_str());
      return 1;
    }
    const EpochPrediction p = PredictEpoch(first->measure, *schedule);
    const EpochMeasure& m = run->measure;
    double lo, mean, hi, dlo, dmean, dhi;
    MinMeanMax(
        run->links, [](const RankTraffic& t) { return (t.bytes_sent + t.bytes_received) / 1e6; },
        &lo, &mean, &hi);
    MinMeanMax(
        run->disks, [](const DiskTraffic& t) { return t.bytes_written / 1e6; }, &dlo, &dmean, &dhi);
    std::printf(
        "%5u %6llu | %6llu %6llu | %7.2f %7.2f | %7.2f %7.2f | %9.1f %9.1f %8.1f | "
        "%6.1f %6.1f %7.1f | %6.1f\n",
        n, (unsigned long long)m.rounds, (unsigned long long)m.moves_busiest_rank,
        (unsigned long long)p.moves_busiest_rank, m.transfer_seconds, p.transfer_seconds,
        run->checkpoint_seconds, p.checkpoint_seconds, m.checkpoint_bytes / 1e6,
        m.checkpoint_bytes_rank0 / 1e6, dhi, lo, mean, hi, run->wall_seconds);
    const ScheduleCosts c = CostsOf(*schedule);
    std::printf(
        "      checkpoint: hand-offs %llu moves %.2f s, largest share %u partitions "
        "written in %.2f s, the rest %.2f s; mean rank's move steps %.1f, %.1f MB/s a "
        "link\n",
        (unsigned long long)c.handoff_moves, m.checkpoint_handoff_seconds, c.largest_share,
        m.checkpoint_write_seconds,
        run->checkpoint_seconds - m.checkpoint_handoff_seconds - m.checkpoint_write_seconds,
        c.move_steps,
        m.transfer_seconds > 0 ? c.move_steps * m.partition_bytes / m.transfer_seconds / 1e6 : 0.0);
    if (n != first->ranks) {
      std::printf(
          "      predicted from %u ranks: moves %+.0f %%, their wait %+.0f %%, "
          "checkpoint %+.0f %%\n",
          first->ranks, ErrorPercent(p.moves_busiest_rank, m.moves_busiest_rank),
          ErrorPercent(p.transfer_seconds, m.transfer_seconds),
          ErrorPercent(p.checkpoint_seconds, run->checkpoint_seconds));
    }
    std::fflush(stdout);
  }
  std::printf(
      "ckpt MB: partition rows and state the checkpoint wrote (all ranks, rank 0's "
      "share), and the most any rank's disk took (with RocksDB's logs and manifests)\n");
  return 0;
}

}  // namespace
}  // namespace ember::bench

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage("cluster_sim GRAPH [--ranks 16,64] [flags]");
  std::vector<char*> args = absl::ParseCommandLine(argc, argv);
  if (args.size() != 2) {
    std::fprintf(stderr, "usage: cluster_sim GRAPH [--ranks 16,64] [flags]\n");
    return 2;
  }
  // Each rank's copy holds P + 1 RocksDB databases, a few files open each.
  ember::internal::RaiseOpenFileLimit();
  const std::string graph = args[1];
  std::string work = absl::GetFlag(FLAGS_work);
  if (work.empty()) work = graph + ".sim";
  return ember::bench::Main(graph, work);
}
