// Training across ranks (TrainGraphOnCluster) with the in-process cluster:
// N ranks as threads of one process over one graph directory (rank 0
// writes, the others read), or each over its own copy (rank_copies). The MPI cluster runs the same
// loop; its end-to-end tests run `mpirun ... ember train` (tests/mpi/).
#include <algorithm>
#include <atomic>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "partition/train_memory.h"
#include "storage/base/file_system.h"
#include "storage/base/mutex.h"
#include "storage/base/status_macros.h"
#include "tests/storage/fault_injection_fs.h"
#include "tests/train/train_test_util.h"
#include "train/distributed/cluster.h"
#include "train/model/gather_copies.h"
#include "train/train_loop.h"

namespace ember {
namespace {

using ::testing::HasSubstr;
using train_test::LoadSnapshot;
using train_test::TempDir;

class DistributedTrainTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    edges_ = tmp_->Sub("sbm.tsv");
    tools::gen::SbmOptions sbm;
    sbm.nodes = 1200;
    sbm.blocks = 10;
    sbm.avg_degree = 10;
    sbm.mixing = 0.1;
    sbm.seed = 5;
    train_test::WriteSbmEdges(sbm, edges_);
    graphs_ = new train_test::GraphFactory(tmp_->path(), {edges_});
  }
  static void TearDownTestSuite() {
    delete graphs_;
    delete tmp_;
  }

  // Deterministic, with relation parameters (translation) that the ranks
  // must sum in the same order as one process.
  static TrainOptions Options(int epochs) {
    TrainOptions o = train_test::SmallOptions(epochs);
    o.model.dim = 16;
    o.model.op = Operator::kTranslation;
    o.pipeline.deterministic = true;
    o.devices.threads = 1;
    o.devices.trainers = 1;
    return o;
  }

  // Runs rank r's TrainGraphOnCluster(dirs[r], options[r]) on its own
  // thread. A rank that fails ends the job (Cluster::Abort), as the CLI
  // does, so that the others do not wait for it.
  static std::vector<absl::StatusOr<TrainSummary>> RunRanks(
      InProcessCluster& cluster, uint32_t n, const std::vector<std::string>& dirs,
      const std::vector<TrainOptions>& options) {
    std::vector<absl::StatusOr<TrainSummary>> out(n, absl::UnknownError("not run"));
    std::vector<std::thread> threads;
    for (uint32_t r = 0; r < n; ++r) {
      threads.emplace_back([&, r] {
        out[r] = TrainGraphOnCluster(dirs[r], options[r], cluster.rank(r));
        if (!out[r].ok()) cluster.rank(r)->Abort(out[r].status());
      });
    }
    for (std::thread& t : threads) t.join();
    return out;
  }
  static std::vector<absl::StatusOr<TrainSummary>> RunRanks(InProcessCluster& cluster, uint32_t n,
                                                            const std::vector<std::string>& dirs,
                                                            const TrainOptions& options) {
    return RunRanks(cluster, n, dirs, std::vector<TrainOptions>(n, options));
  }

  // The snapshot of one process of `trainers` trainers (and threads)
  // trained with Options(2) on a new graph of `partitions`.
  static absl::StatusOr<train_test::ModelSnapshot> OneProcess(uint32_t trainers,
                                                              uint32_t partitions) {
    const std::string one = graphs_->New(partitions);
    TrainOptions single = Options(2);
    single.devices.trainers = static_cast<int>(trainers);
    single.devices.threads = static_cast<int>(trainers);
    RETURN_IF_ERROR(TrainGraph(one, single).status());
    return LoadSnapshot(one);
  }
  // `n` new, identical graphs of `partitions`, at `base`.0 .. `base`.n-1:
  // the ranks' own copies.
  static std::vector<std::string> NewCopies(const std::string& base, uint32_t n,
                                            uint32_t partitions) {
    std::vector<std::string> copies;
    for (uint32_t r = 0; r < n; ++r) {
      copies.push_back(absl::StrCat(base, ".", r));
      std::filesystem::rename(graphs_->New(partitions), copies.back());
    }
    return copies;
  }

  static TempDir* tmp_;
  static std::string edges_;
  static train_test::GraphFactory* graphs_;
};

TempDir* DistributedTrainTest::tmp_ = nullptr;
std::string DistributedTrainTest::edges_;
train_test::GraphFactory* DistributedTrainTest::graphs_ = nullptr;

// N ranks of one trainer each equal one process of N trainers, bit for bit,
// and partitions did move between the ranks.
TEST_F(DistributedTrainTest, DeterministicRanksEqualOneProcessOfAsManyTrainers) {
  for (uint32_t n : {2u, 3u}) {
    SCOPED_TRACE(absl::StrCat(n, " ranks"));
    const std::string one = graphs_->New(4);
    TrainOptions single = Options(2);
    single.devices.trainers = static_cast<int>(n);
    single.devices.threads = static_cast<int>(n);
    auto s = TrainGraph(one, single);
    ASSERT_TRUE(s.ok()) << s.status();

    const std::string many = graphs_->New(4);
    auto cluster = InProcessCluster::Create(n);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    auto runs = RunRanks(**cluster, n, std::vector<std::string>(n, many), Options(2));
    for (uint32_t r = 0; r < n; ++r) {
      ASSERT_TRUE(runs[r].ok()) << "rank " << r << ": " << runs[r].status();
      ASSERT_EQ(runs[r]->epochs.size(), 2u);
      EXPECT_EQ(runs[r]->epochs[1].edges, s->epochs[1].edges) << "rank " << r;
      EXPECT_EQ(runs[r]->epochs[1].loss, s->epochs[1].loss) << "rank " << r;
    }
    EXPECT_GT((*cluster)->messages(), 0u) << "no partition moved between ranks";
    // Some moves travelled while the round before trained (and the bits
    // still match).
    uint64_t hidden = 0;
    for (const EpochStats& e : runs[0]->epochs) {
      ASSERT_TRUE(e.ranks_measure.has_value());
      hidden += e.ranks_measure->bytes_overlapped;
    }
    EXPECT_GT(hidden, 0u);
    // The busiest rank moved at round boundaries what the cost model
    // counts for this schedule (no checkpoint inside the epoch).
    const EpochStats& first = runs[0]->epochs[0];
    ASSERT_TRUE(first.predicted.has_value());
    EXPECT_GT(first.ranks_measure->moves_busiest_rank, 0u);
    EXPECT_EQ(first.ranks_measure->moves_busiest_rank, first.predicted->moves_busiest_rank);
    auto a = LoadSnapshot(one);
    auto b = LoadSnapshot(many);
    ASSERT_TRUE(a.ok()) << a.status();
    ASSERT_TRUE(b.ok()) << b.status();
    train_test::ExpectBitIdentical(*a, *b);
  }
}

// The moves of a round that start while the round before trains belong to
// that round of that epoch. Over checkpoint intervals and seeds, checkpoint
// pauses fall before rounds whose moves started early in the epoch before
// (2 ranks of 2 trainers, 8 partitions, --checkpoint-every 2: seeds 6 to 9
// pause before round 17 of an epoch whose round 17 started early in the
// epoch before); every run of three epochs finishes. Syncs go to a file
// system that counts them without doing them: the test checks the moves,
// not the disk.
TEST_F(DistributedTrainTest, CheckpointPausesBeforeAnyRoundOfAnyEpochKeepItsMoves) {
  testing::FaultInjectingFileSystem fast_syncs;
  ScopedFileSystem scoped(&fast_syncs);
  uint64_t overlapped = 0;
  for (uint32_t every : {2u, 3u}) {
    for (uint64_t seed = 4; seed < 10; ++seed) {
      SCOPED_TRACE(absl::StrCat("--checkpoint-every ", every, ", seed ", seed));
      const std::string dir = graphs_->New(8);
      TrainOptions o = Options(3);
      o.devices.trainers = 2;
      o.devices.threads = 2;
      o.seed = seed;
      o.schedule.checkpoint_every = every;
      auto cluster = InProcessCluster::Create(2);
      ASSERT_TRUE(cluster.ok()) << cluster.status();
      auto runs = RunRanks(**cluster, 2, {dir, dir}, o);
      for (uint32_t r = 0; r < 2; ++r) {
        ASSERT_TRUE(runs[r].ok()) << "rank " << r << ": " << runs[r].status();
        ASSERT_EQ(runs[r]->epochs.size(), 3u) << "rank " << r;
      }
      for (const EpochStats& e : runs[0]->epochs) {
        ASSERT_TRUE(e.ranks_measure.has_value());
        overlapped += e.ranks_measure->bytes_overlapped;
      }
    }
  }
  // Not vacuous: some moves did travel while the round before trained.
  EXPECT_GT(overlapped, 0u);
}

// A run across ranks stopped mid-epoch (after a checkpoint) resumes with as
// many ranks and ends where an uninterrupted run ends; one process may not
// resume it mid-epoch.
TEST_F(DistributedTrainTest, StoppedMidEpochResumesWithAsManyRanksBitIdentically) {
  const std::string whole = graphs_->New(4);
  TrainOptions single = Options(2);
  single.devices.trainers = 2;
  single.devices.threads = 2;
  ASSERT_TRUE(TrainGraph(whole, single).ok());

  const std::string dir = graphs_->New(4);
  TrainOptions o = Options(2);
  o.schedule.checkpoint_every = 3;
  o.hooks.stop_after_buckets = 28;  // mid epoch 2 (16 buckets an epoch), after a checkpoint
  auto cluster = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto stopped = RunRanks(**cluster, 2, {dir, dir}, o);
  for (const auto& r : stopped) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->stopped);
  }
  auto m = train_test::ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 1);

  TrainOptions alone = single;
  alone.hooks.stop_after_buckets = 0;
  auto refused = TrainGraph(dir, alone);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("2 rank(s)"));

  o.hooks.stop_after_buckets = 0;
  auto resumed = RunRanks(**cluster, 2, {dir, dir}, o);
  for (const auto& r : resumed) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->resumed);
    EXPECT_GT(r->start_round, 0u);
  }
  auto a = LoadSnapshot(whole);
  auto b = LoadSnapshot(dir);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(b.ok()) << b.status();
  train_test::ExpectBitIdentical(*a, *b);
}

// At an epoch boundary a run may go on with any number of ranks, or in one
// process: each rank loads its share from the last checkpoint.
TEST_F(DistributedTrainTest, AtAnEpochBoundaryAnyNumberOfRanksGoesOn) {
  const std::string dir = graphs_->New(4);
  int epochs = 0;
  for (uint32_t n : {2u, 3u}) {
    auto cluster = InProcessCluster::Create(n);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    auto runs = RunRanks(**cluster, n, std::vector<std::string>(n, dir), Options(epochs + 1));
    for (const auto& r : runs) {
      ASSERT_TRUE(r.ok()) << r.status();
      EXPECT_EQ(r->start_epoch, epochs);
      ASSERT_EQ(r->epochs.size(), 1u);
    }
    ++epochs;
  }
  auto alone = TrainGraph(dir, Options(3));
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_EQ(alone->start_epoch, 2);
  auto m = train_test::ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 3);
}

// Ranks whose graph copies differ stop before training, naming both.
TEST_F(DistributedTrainTest, ADifferentGraphCopyIsRefusedOnEveryRank) {
  const std::string dir = graphs_->New(4);
  const std::string other = tmp_->Sub("other");
  ASSERT_TRUE(train_test::ImportEdges(other, {edges_}, 4, /*with_splits=*/false).ok());
  auto cluster = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto runs = RunRanks(**cluster, 2, {dir, other}, Options(1));
  for (const auto& r : runs) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("different copy of the graph"));
    EXPECT_THAT(r.status().message(), HasSubstr(other));
    EXPECT_THAT(r.status().message(), HasSubstr(dir));
  }
  auto m = train_test::ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->training.checkpoint_version, 0u);
}

// Ranks that each train their own copy ("%r" in the path names the rank)
// write only their share of every checkpoint; rank 0's copy then lacks the
// others' rows and says so, `ember gather` brings them in, and the model
// equals one process's of as many trainers, bit for bit.
TEST_F(DistributedTrainTest, OwnCopiesWriteTheirSharesAndGatherToOneProcessBits) {
  const uint32_t n = 2;
  auto want = OneProcess(n, 4);
  ASSERT_TRUE(want.ok()) << want.status();
  const std::string base = tmp_->Sub("own");
  const std::vector<std::string> copies = NewCopies(base, n, 4);
  TrainOptions o = Options(2);
  o.schedule.checkpoint_every = 3;
  auto cluster = InProcessCluster::Create(n);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto runs = RunRanks(**cluster, n, std::vector<std::string>(n, base + ".%r"), o);
  for (uint32_t r = 0; r < n; ++r)
    ASSERT_TRUE(runs[r].ok()) << "rank " << r << ": " << runs[r].status();
  // Rank 0 wrote its share, not the model: about 1/n of it.
  for (const EpochStats& e : runs[0]->epochs) {
    ASSERT_TRUE(e.ranks_measure.has_value());
    const EpochMeasure& m = *e.ranks_measure;
    EXPECT_TRUE(m.checkpoint_per_rank);
    EXPECT_GT(m.checkpoint_bytes_rank0, 0u);
    EXPECT_LE(m.checkpoint_bytes_rank0, m.checkpoint_bytes * 6 / 10) << "epoch " << e.epoch;
  }
  auto before = LoadSnapshot(copies[0]);
  ASSERT_FALSE(before.ok());
  EXPECT_THAT(before.status().message(), HasSubstr("ember gather"));
  auto gathered = GatherCopies(copies[0], {copies[1]});
  ASSERT_TRUE(gathered.ok()) << gathered.status();
  EXPECT_GT(gathered->partitions, 0u);
  EXPECT_LT(gathered->partitions, 4u);
  auto b = LoadSnapshot(copies[0]);
  ASSERT_TRUE(b.ok()) << b.status();
  train_test::ExpectBitIdentical(*want, *b);
  // Gathered once, whole: a second gather has nothing to do.
  auto again = GatherCopies(copies[0], {});
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->partitions, 0u);
}

// A rank that fails at any step of a checkpoint into own copies (as a kill
// would stop it there) leaves every copy resumable: the rerun starts from
// the last checkpoint rank 0 committed (a copy whose own commit did not
// happen takes rank 0's) and ends with one process's bits.
TEST_F(DistributedTrainTest, OwnCopiesStoppedAtAnyCheckpointStepResume) {
  const uint32_t n = 2;
  auto want = OneProcess(n, 4);
  ASSERT_TRUE(want.ok()) << want.status();

  for (CheckpointStep step : {CheckpointStep::kShareWritten, CheckpointStep::kRankZeroCommitted,
                              CheckpointStep::kCommitted}) {
    for (uint32_t failing = 0; failing < n; ++failing) {
      SCOPED_TRACE(absl::StrCat("step ", static_cast<int>(step), ", rank ", failing));
      const std::vector<std::string> copies =
          NewCopies(tmp_->Sub(absl::StrCat("steps", static_cast<int>(step), failing)), n, 4);
      TrainOptions o = Options(2);
      o.rank_copies = true;
      // The second checkpoint (the end of epoch 1) fails on one rank.
      auto calls = std::make_shared<std::atomic<int>>(0);
      o.hooks.checkpoint_step = [=](uint32_t rank, CheckpointStep at) -> absl::Status {
        if (rank != failing || at != step) return absl::OkStatus();
        if (calls->fetch_add(1) != 1) return absl::OkStatus();
        return absl::AbortedError("killed by the test");
      };
      auto cluster = InProcessCluster::Create(n);
      ASSERT_TRUE(cluster.ok()) << cluster.status();
      auto failed = RunRanks(**cluster, n, copies, o);
      for (const auto& r : failed) EXPECT_FALSE(r.ok());
      // Rank 0's commit is the checkpoint's.
      auto zero = train_test::ManifestOf(copies[0]);
      auto other = train_test::ManifestOf(copies[1]);
      ASSERT_TRUE(zero.ok() && other.ok());
      const bool committed = step != CheckpointStep::kShareWritten;
      EXPECT_EQ(zero->training.checkpoint_version, committed ? 2u : 1u);
      if (step == CheckpointStep::kRankZeroCommitted) {
        EXPECT_EQ(other->training.checkpoint_version, 1u);  // behind: rolls forward
      }
      o.hooks.checkpoint_step = nullptr;
      auto cluster2 = InProcessCluster::Create(n);
      ASSERT_TRUE(cluster2.ok()) << cluster2.status();
      auto resumed = RunRanks(**cluster2, n, copies, o);
      for (const auto& r : resumed) {
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(r->start_epoch, committed ? 2 : 1);
      }
      ASSERT_TRUE(GatherCopies(copies[1], {copies[0]}).ok());
      auto got = LoadSnapshot(copies[1]);
      ASSERT_TRUE(got.ok()) << got.status();
      train_test::ExpectBitIdentical(*want, *got);
    }
  }
}

// Ranks sharing one graph directory each write their share of a
// checkpoint: rank 0 into the shards, the others as table files beside
// them that rank 0 takes in before it commits. Rank 0 writes about 1/n of
// the bytes, nothing is left staged, and the model equals one process's.
TEST_F(DistributedTrainTest, SharedGraphRanksWriteTheirSharesBesideIt) {
  const uint32_t n = 2;
  auto want = OneProcess(n, 4);
  ASSERT_TRUE(want.ok()) << want.status();
  const std::string dir = graphs_->New(4);
  TrainOptions o = Options(2);
  o.schedule.checkpoint_every = 3;
  auto cluster = InProcessCluster::Create(n);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto runs = RunRanks(**cluster, n, std::vector<std::string>(n, dir), o);
  for (uint32_t r = 0; r < n; ++r)
    ASSERT_TRUE(runs[r].ok()) << "rank " << r << ": " << runs[r].status();
  for (const EpochStats& e : runs[0]->epochs) {
    ASSERT_TRUE(e.ranks_measure.has_value());
    const EpochMeasure& m = *e.ranks_measure;
    EXPECT_TRUE(m.checkpoint_per_rank);
    EXPECT_GT(m.checkpoint_bytes_rank0, 0u);
    EXPECT_LE(m.checkpoint_bytes_rank0, m.checkpoint_bytes * 6 / 10) << "epoch " << e.epoch;
  }
  EXPECT_FALSE(std::filesystem::exists(dir + "/incoming"));
  auto got = LoadSnapshot(dir);
  ASSERT_TRUE(got.ok()) << got.status();
  train_test::ExpectBitIdentical(*want, *got);
}

// Ranks on copies of the graph that are not their own (no --rank-copies,
// no shared directory) see that rank 0's graph is not theirs and
// checkpoint through rank 0: its copy ends with the whole model, equal to
// one process's; the other copies are left as they were.
TEST_F(DistributedTrainTest, SeparateCopiesWithoutRankCopiesCheckpointThroughRankZero) {
  const uint32_t n = 2;
  auto want = OneProcess(n, 4);
  ASSERT_TRUE(want.ok()) << want.status();
  const std::vector<std::string> copies = NewCopies(tmp_->Sub("apart"), n, 4);
  auto cluster = InProcessCluster::Create(n);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto runs = RunRanks(**cluster, n, copies, Options(2));
  for (uint32_t r = 0; r < n; ++r)
    ASSERT_TRUE(runs[r].ok()) << "rank " << r << ": " << runs[r].status();
  for (const EpochStats& e : runs[0]->epochs) {
    ASSERT_TRUE(e.ranks_measure.has_value());
    EXPECT_FALSE(e.ranks_measure->checkpoint_per_rank);
    EXPECT_EQ(e.ranks_measure->checkpoint_bytes_rank0, e.ranks_measure->checkpoint_bytes);
  }
  auto got = LoadSnapshot(copies[0]);
  ASSERT_TRUE(got.ok()) << got.status();
  train_test::ExpectBitIdentical(*want, *got);
  auto other = train_test::ManifestOf(copies[1]);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(other->training.checkpoint_version, 0u);
  EXPECT_FALSE(std::filesystem::exists(copies[1] + "/incoming"));
}

// Stopped after either phase of a checkpoint on either rank, ranks sharing
// one graph resume from the last committed checkpoint (what the stopped one
// staged is removed at the start) and end as one process does.
TEST_F(DistributedTrainTest, SharedGraphStoppedAtAnyCheckpointStepResumes) {
  const uint32_t n = 2;
  auto want = OneProcess(n, 4);
  ASSERT_TRUE(want.ok()) << want.status();
  for (CheckpointStep step : {CheckpointStep::kShareWritten, CheckpointStep::kRankZeroCommitted}) {
    for (uint32_t failing = 0; failing < n; ++failing) {
      SCOPED_TRACE(absl::StrCat("step ", static_cast<int>(step), ", rank ", failing));
      const std::string dir = graphs_->New(4);
      TrainOptions o = Options(2);
      // The second checkpoint (the end of epoch 1) fails on one rank.
      auto calls = std::make_shared<std::atomic<int>>(0);
      o.hooks.checkpoint_step = [=](uint32_t rank, CheckpointStep at) -> absl::Status {
        if (rank != failing || at != step) return absl::OkStatus();
        if (calls->fetch_add(1) != 1) return absl::OkStatus();
        return absl::AbortedError("killed by the test");
      };
      auto cluster = InProcessCluster::Create(n);
      ASSERT_TRUE(cluster.ok()) << cluster.status();
      auto failed = RunRanks(**cluster, n, std::vector<std::string>(n, dir), o);
      for (const auto& r : failed) EXPECT_FALSE(r.ok());
      const bool committed = step != CheckpointStep::kShareWritten;
      auto manifest = train_test::ManifestOf(dir);
      ASSERT_TRUE(manifest.ok()) << manifest.status();
      EXPECT_EQ(manifest->training.checkpoint_version, committed ? 2u : 1u);
      // Rank 1's staged share of the checkpoint that did not commit.
      if (!committed) EXPECT_TRUE(std::filesystem::exists(dir + "/incoming/2"));
      o.hooks.checkpoint_step = nullptr;
      auto cluster2 = InProcessCluster::Create(n);
      ASSERT_TRUE(cluster2.ok()) << cluster2.status();
      auto resumed = RunRanks(**cluster2, n, std::vector<std::string>(n, dir), o);
      for (const auto& r : resumed) {
        ASSERT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(r->start_epoch, committed ? 2 : 1);
      }
      EXPECT_FALSE(std::filesystem::exists(dir + "/incoming"));
      auto got = LoadSnapshot(dir);
      ASSERT_TRUE(got.ok()) << got.status();
      train_test::ExpectBitIdentical(*want, *got);
    }
  }
}

// A rank whose buffer is smaller than its share trains out of core in its
// own copy (partitions to send or train loaded from it, others evicted to
// it), beside a rank holding all of its share in memory; a run stopped
// mid-epoch resumes, and the gathered model equals one process's, bit for
// bit.
TEST_F(DistributedTrainTest, ARankBelowItsShareTrainsOutOfCoreInItsOwnCopy) {
  const uint32_t n = 2;
  auto want = OneProcess(n, 8);
  ASSERT_TRUE(want.ok()) << want.status();
  const std::vector<std::string> copies = NewCopies(tmp_->Sub("out_of_core"), n, 8);
  std::vector<TrainOptions> o(n, Options(2));
  for (TrainOptions& x : o) {
    x.rank_copies = true;
    x.schedule.checkpoint_every = 5;
    x.hooks.stop_after_buckets = 70;  // in epoch 1 (64 buckets an epoch)
    x.rank_timeout_seconds = 30;
  }
  o[0].schedule.buffer_partitions = 2;  // a round's two; its share is about 4
  auto cluster = InProcessCluster::Create(n);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto stopped = RunRanks(**cluster, n, copies, o);
  for (const auto& r : stopped) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->stopped);
  }
  // Rank 0 loaded partitions from its copy besides those it received:
  // more than rank 1, which only receives.
  uint64_t loads0 = 0, loads1 = 0;
  for (const EpochStats& e : stopped[0]->epochs) loads0 += e.partition_loads;
  for (const EpochStats& e : stopped[1]->epochs) loads1 += e.partition_loads;
  EXPECT_GT(loads0, loads1 + 8) << "rank 0 " << loads0 << ", rank 1 " << loads1;
  for (TrainOptions& x : o) x.hooks.stop_after_buckets = 0;
  auto cluster2 = InProcessCluster::Create(n);
  ASSERT_TRUE(cluster2.ok()) << cluster2.status();
  auto resumed = RunRanks(**cluster2, n, copies, o);
  for (const auto& r : resumed) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->resumed);
  }
  ASSERT_TRUE(GatherCopies(copies[0], {copies[1]}).ok());
  auto b = LoadSnapshot(copies[0]);
  ASSERT_TRUE(b.ok()) << b.status();
  train_test::ExpectBitIdentical(*want, *b);

  // Through rank 0 (no own copies) the same buffer is refused, naming the
  // way out.
  const std::string shared = graphs_->New(8);
  std::vector<TrainOptions> funnel(n, Options(1));
  funnel[0].schedule.buffer_partitions = 2;
  auto cluster3 = InProcessCluster::Create(n);
  ASSERT_TRUE(cluster3.ok()) << cluster3.status();
  auto refused = RunRanks(**cluster3, n, {shared, shared}, funnel);
  ASSERT_FALSE(refused[0].ok());
  EXPECT_THAT(refused[0].status().message(), HasSubstr("--rank-copies"));
}

// A --memory-budget whose rows share holds `partitions` of the graph's
// largest partitions at `dim`, and not one more.
uint64_t BudgetHolding(const std::string& dir, int dim, uint32_t partitions) {
  auto m = train_test::ManifestOf(dir);
  EXPECT_TRUE(m.ok()) << m.status();
  if (!m.ok()) return 0;
  const uint64_t largest = *std::max_element(m->partition_sizes.begin(), m->partition_sizes.end());
  const uint64_t bytes = largest * RowBytesPerNode(dim);
  // The rows share is 5/8 of the budget: aim at partitions + 1/2.
  return (2 * partitions + 1) * bytes * 8 / 10 + 8;
}

// Ranks that would compute different schedules or train different models
// stop before training, on every rank, naming the option and both values;
// nothing is written.
TEST_F(DistributedTrainTest, RanksWithDifferentDimsAreRefusedAtStart) {
  const std::string dir = graphs_->New(4);
  std::vector<TrainOptions> o(2, Options(1));
  o[1].model.dim = 32;
  o[0].rank_timeout_seconds = o[1].rank_timeout_seconds = 30;  // a bound, not a measure
  auto cluster = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto runs = RunRanks(**cluster, 2, {dir, dir}, o);
  for (const auto& r : runs) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_THAT(r.status().message(), HasSubstr("rank 1 (in-process rank 1"));
    EXPECT_THAT(r.status().message(), HasSubstr("trains with --dim 32, rank 0"));
    EXPECT_THAT(r.status().message(), HasSubstr("with --dim 16; give every rank the same --dim"));
  }
  auto m = train_test::ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->training.checkpoint_version, 0u);
}

// Under --bucket-order beta the order reads a buffer each rank plans from
// its own budget: budgets that plan different buffers are refused; under
// inside-out, which reads none, each rank's budget is its own.
TEST_F(DistributedTrainTest, RanksWhoseBudgetsShapeDifferentSchedulesAreRefusedAtStart) {
  const std::string dir = graphs_->New(8);
  std::vector<TrainOptions> o(2, Options(1));
  for (TrainOptions& x : o) {
    x.schedule.bucket_order = BucketOrderKind::kBeta;
    x.rank_timeout_seconds = 30;  // a bound, not a measure
  }
  o[1].schedule.memory_budget = BudgetHolding(dir, o[1].model.dim, 7);
  auto cluster = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto runs = RunRanks(**cluster, 2, {dir, dir}, o);
  for (const auto& r : runs) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_THAT(r.status().message(),
                HasSubstr("trains with --bucket-order beta's buffer of 7 partitions (from "
                          "--memory-budget 1 MiB), rank 0"));
    EXPECT_THAT(r.status().message(),
                HasSubstr("with --bucket-order beta's buffer of 8 partitions (from "
                          "--memory-budget 2048 MiB); give every rank the same --memory-budget"));
  }
  auto m = train_test::ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->training.checkpoint_version, 0u);

  for (TrainOptions& x : o) x.schedule.bucket_order = BucketOrderKind::kInsideOut;
  auto cluster2 = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster2.ok()) << cluster2.status();
  runs = RunRanks(**cluster2, 2, {dir, dir}, o);
  for (const auto& r : runs) EXPECT_TRUE(r.ok()) << r.status();
}

// Every other option that shapes the schedule or the model is compared
// too: each, differing on rank 1 alone, is refused naming it.
TEST_F(DistributedTrainTest, EveryOptionThatShapesTheRunIsCompared) {
  const std::string dir = graphs_->New(4);
  struct Case {
    const char* named;
    std::function<void(TrainOptions*)> change;
  };
  const std::vector<Case> cases = {
      {"--operator diagonal", [](TrainOptions* o) { o->model.op = Operator::kDiagonal; }},
      {"--comparator cos", [](TrainOptions* o) { o->model.comparator = Comparator::kCos; }},
      {"--loss ranking", [](TrainOptions* o) { o->model.loss = Loss::kRanking; }},
      {"--seed 2", [](TrainOptions* o) { o->seed = 2; }},
      {"--bucket-order beta",
       [](TrainOptions* o) { o->schedule.bucket_order = BucketOrderKind::kBeta; }},
      {"--epochs 2", [](TrainOptions* o) { o->epochs = 2; }},
      {"--checkpoint-every 3", [](TrainOptions* o) { o->schedule.checkpoint_every = 3; }},
      {"--lr 0.05,", [](TrainOptions* o) { o->optimizer.lr = 0.05f; }},
      {"--deterministic false", [](TrainOptions* o) { o->pipeline.deterministic = false; }},
      {"--batch-size 200", [](TrainOptions* o) { o->pipeline.batch_size = 200; }},
      {"--margin 0.25", [](TrainOptions* o) { o->model.margin = 0.25f; }},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.named);
    std::vector<TrainOptions> o(2, Options(1));
    c.change(&o[1]);
    auto cluster = InProcessCluster::Create(2);
    ASSERT_TRUE(cluster.ok()) << cluster.status();
    auto runs = RunRanks(**cluster, 2, {dir, dir}, o);
    for (const auto& r : runs) {
      ASSERT_FALSE(r.ok());
      EXPECT_THAT(r.status().message(), HasSubstr(c.named)) << r.status();
    }
  }
}

// A run across ranks under beta stopped mid-epoch records the buffer its
// order read; a resume whose budget plans another is refused, naming both.
TEST_F(DistributedTrainTest, AMidEpochResumeWithAnotherBetaBufferIsRefused) {
  const std::string dir = graphs_->New(8);
  TrainOptions o = Options(1);
  o.schedule.bucket_order = BucketOrderKind::kBeta;
  o.schedule.checkpoint_every = 10;
  o.hooks.stop_after_buckets = 30;  // after a checkpoint, mid epoch (64 buckets)
  auto cluster = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto stopped = RunRanks(**cluster, 2, {dir, dir}, o);
  for (const auto& r : stopped) {
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_TRUE(r->stopped);
  }
  auto m = train_test::ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  auto state = ReadTrainState(*m, dir + "/MANIFEST.json");
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_GT(state->position.next_round, 0u);
  EXPECT_EQ(state->position.buffer_partitions, 8u);

  o.hooks.stop_after_buckets = 0;
  o.schedule.memory_budget = BudgetHolding(dir, o.model.dim, 7);
  auto cluster2 = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster2.ok()) << cluster2.status();
  auto refused = RunRanks(**cluster2, 2, {dir, dir}, o);
  for (const auto& r : refused) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_THAT(r.status().message(),
                HasSubstr("stopped mid-epoch by a run of another schedule: a bucket-order buffer "
                          "(from --memory-budget, --buffer-partitions) of 8, this run 7"));
  }
  auto after = train_test::ManifestOf(dir);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->training.checkpoint_version, m->training.checkpoint_version);
}

// Rank 0's disk as a slow or a stalled one: each sync of a RocksDB table
// file (what the partitions a checkpoint writes become) takes `delay`, or,
// while stalled, waits until Release. Over the fault-injection file system,
// whose own syncs are counted, not done.
class SlowTableSyncs final : public FileSystemWrapper {
 public:
  SlowTableSyncs() : FileSystemWrapper(&base_) {}
  void SetDelay(absl::Duration delay) {
    MutexLock lock(&mu_);
    delay_ = delay;
  }
  void Stall() {
    MutexLock lock(&mu_);
    stalled_ = true;
  }
  void Release() {
    MutexLock lock(&mu_);
    stalled_ = false;
  }
  int table_syncs() const {
    MutexLock lock(&mu_);
    return table_syncs_;
  }

  absl::StatusOr<std::unique_ptr<WritableFile>> OpenForWrite(const std::string& path,
                                                             WriteMode mode) override {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, target()->OpenForWrite(path, mode));
    // Rank 0's disk: its shards' table files (not the others' staged ones).
    if (!absl::EndsWith(path, ".sst") || absl::StrContains(path, "/incoming/")) return file;
    return std::unique_ptr<WritableFile>(new TableFile(this, std::move(file)));
  }

 private:
  class TableFile final : public WritableFile {
   public:
    TableFile(SlowTableSyncs* fs, std::unique_ptr<WritableFile> file)
        : WritableFile(file->path()), fs_(fs), file_(std::move(file)) {}
    absl::Status Append(std::string_view data) override { return file_->Append(data); }
    absl::Status Sync() override {
      fs_->TableSync();
      return file_->Sync();
    }
    absl::Status Close() override { return file_->Close(); }

   private:
    SlowTableSyncs* fs_;
    std::unique_ptr<WritableFile> file_;
  };

  // The slow disk: the delay is the point of this file system (a sleep
  // that stands for a disk, not one that waits for work).
  void TableSync() {
    absl::Duration delay;
    {
      MutexLock lock(&mu_);
      ++table_syncs_;
      mu_.Await(absl::Condition(
          +[](bool* stalled) { return !*stalled; }, &stalled_));
      delay = delay_;
    }
    absl::SleepFor(delay);
  }

  testing::FaultInjectingFileSystem base_;
  mutable Mutex mu_;
  absl::Duration delay_ ABSL_GUARDED_BY(mu_);
  bool stalled_ ABSL_GUARDED_BY(mu_) = false;
  int table_syncs_ ABSL_GUARDED_BY(mu_) = 0;
};

// A checkpoint that takes longer than --rank-timeout in all, but makes
// progress (a partition written) well within it, does not end the job:
// the ranks write their shares a partition each at a time, agreed after
// each, so that every partition written counts as progress on every rank.
TEST_F(DistributedTrainTest, ASlowCheckpointThatKeepsWritingPartitionsFinishes) {
  const std::string dir = graphs_->New(8);
  SlowTableSyncs disk;
  const absl::Duration delay = absl::Milliseconds(250);
  disk.SetDelay(delay);
  ScopedFileSystem scoped(&disk);
  TrainOptions o = Options(1);
  o.rank_timeout_seconds = 2;
  auto cluster = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto runs = RunRanks(**cluster, 2, {dir, dir}, o);
  for (uint32_t r = 0; r < 2; ++r) {
    ASSERT_TRUE(runs[r].ok()) << "rank " << r << ": " << runs[r].status();
    EXPECT_EQ(runs[r]->epochs.size(), 1u);
  }
  // Not vacuous: the checkpoint's table syncs alone took longer than the
  // rank timeout.
  EXPECT_GT(disk.table_syncs() * delay, absl::Seconds(o.rank_timeout_seconds))
      << disk.table_syncs() << " table syncs";
}

// A rank that truly stalls (rank 0's disk stops in the middle of a
// checkpoint) still ends the job: every rank returns DeadlineExceeded
// naming --rank-timeout, through the library's own watchdog.
TEST_F(DistributedTrainTest, AStalledRankStopsTheJobAfterTheRankTimeout) {
  const std::string dir = graphs_->New(4);
  SlowTableSyncs disk;
  ScopedFileSystem scoped(&disk);
  disk.Stall();
  TrainOptions o = Options(1);
  o.rank_timeout_seconds = 1;
  auto cluster = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::vector<absl::StatusOr<TrainSummary>> out(2, absl::UnknownError("not run"));
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] { out[r] = TrainGraphOnCluster(dir, o, (*cluster)->rank(r)); });
  }
  // Rank 1 returns while rank 0 is still stalled: the job was ended.
  ranks[1].join();
  disk.Release();
  ranks[0].join();
  for (uint32_t r = 0; r < 2; ++r) {
    ASSERT_FALSE(out[r].ok()) << "rank " << r;
    EXPECT_EQ(out[r].status().code(), absl::StatusCode::kDeadlineExceeded) << out[r].status();
    EXPECT_THAT(out[r].status().message(), HasSubstr("(--rank-timeout 1)")) << out[r].status();
  }
  EXPECT_GT(disk.table_syncs(), 0);
}

TEST_F(DistributedTrainTest, WhatRanksCannotTrainYetIsRefused) {
  TrainOptions o = Options(1);
  o.only_new_edges = true;
  EXPECT_THAT(CheckTrainableAcrossRanks(o).message(), HasSubstr("--only-new-edges"));
  o = Options(1);
  o.in_memory = true;
  EXPECT_FALSE(CheckTrainableAcrossRanks(o).ok());
  o = Options(1);
  o.model.featurized = FeaturizedMode::kIdPlusFeatures;
  EXPECT_TRUE(CheckTrainableAcrossRanks(o).ok());
  EXPECT_TRUE(CheckTrainableAcrossRanks(Options(1)).ok());
}

}  // namespace
}  // namespace ember
