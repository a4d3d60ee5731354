// Runs the `ember` binary: `ember train` killed with SIGKILL mid-epoch
// leaves a loadable checkpoint, and re-running the same command resumes it
// to the same result (bit-identical with --deterministic --threads 1, within
// noise otherwise). Also the CLI's refusals to resume with other flags.
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/internal/keys.h"
#include "storage/manifest.h"
#include "tests/train/train_test_util.h"
#include "tools/gen/features_generator.h"
#include "train/train_loop.h"
#include "train/tune/auto_lr.h"

namespace ember {
namespace {

using ::testing::HasSubstr;
using train_test::ChildProcess;
using train_test::ProcessResult;
using train_test::LoadSnapshot;
using train_test::ManifestOf;
using train_test::MetricsLines;
using train_test::RunBinary;
using train_test::TempDir;

std::vector<std::string> TrainArgv(const std::string& dir, const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {EMBER_BINARY, "train", dir, "--quiet"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return argv;
}

class TrainKillTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    tmp_ = new TempDir();
    edges_ = tmp_->Sub("sbm.tsv");
    train_test::WriteSbmEdges(train_test::StandardSbm(), edges_);
    graphs_ = new train_test::GraphFactory(tmp_->Sub("graphs"), {edges_});
    std::filesystem::create_directory(tmp_->Sub("graphs"));
  }
  static void TearDownTestSuite() {
    delete graphs_;
    graphs_ = nullptr;
    delete tmp_;
    tmp_ = nullptr;
  }

  static std::string NewGraph(uint32_t partitions) { return graphs_->New(partitions); }

  std::string Capture() { return tmp_->Sub(absl::StrCat("run", next_++)); }

  // The model `ember train` with `flags` ends with, uninterrupted, on a
  // fresh graph of 3 partitions.
  absl::StatusOr<train_test::ModelSnapshot> UninterruptedModel(
      const std::vector<std::string>& flags) {
    const std::string dir = NewGraph(3);
    std::string err;
    if (RunBinary(TrainArgv(dir, flags), Capture(), &err) != 0) {
      return absl::InternalError(absl::StrCat("uninterrupted run failed: ", err));
    }
    return LoadSnapshot(dir);
  }

  // Runs `flags` (2 epochs) on `dir` to the end, resuming what is there:
  // the model is bit-identical to `expected`, both epochs done. *err: the
  // run's stderr.
  void ExpectRunToTheEnd(const std::string& dir, const std::vector<std::string>& flags,
                         const train_test::ModelSnapshot& expected, std::string* err) {
    ASSERT_EQ(RunBinary(TrainArgv(dir, flags), Capture(), err), 0) << *err;
    auto got = LoadSnapshot(dir);
    ASSERT_TRUE(got.ok()) << got.status();
    train_test::ExpectBitIdentical(expected, *got);
    auto m = ManifestOf(dir);
    ASSERT_TRUE(m.ok()) << m.status();
    EXPECT_EQ(train_test::EpochsDone(*m), 2u);
  }

  static TempDir* tmp_;
  static std::string edges_;
  static int next_;
  static train_test::GraphFactory* graphs_;
};

TempDir* TrainKillTest::tmp_ = nullptr;
std::string TrainKillTest::edges_;
int TrainKillTest::next_ = 0;
train_test::GraphFactory* TrainKillTest::graphs_ = nullptr;

// Where the graph's manifest says training stands.
struct Position {
  uint64_t version = 0;
  uint32_t epochs_done = 0;
  uint64_t next_round = 0;  // > 0: a mid-epoch checkpoint
};

Position ReadPosition(const std::string& dir) {
  Position pos;
  auto m = ReadManifest(dir + "/MANIFEST.json");
  if (!m.ok()) return pos;
  pos.version = m->training.checkpoint_version;
  if (pos.version == 0) return pos;
  absl::StatusOr<TrainState> state = ReadTrainState(*m, dir + "/MANIFEST.json");
  if (!state.ok()) return pos;
  pos.epochs_done = state->epochs_done;
  pos.next_round = state->position.next_round;
  return pos;
}

// Starts `argv`, waits for a mid-epoch checkpoint of epoch `epoch` (0-based)
// in `dir`, waits `extra_delay` more, and kills the run with SIGKILL.
// Fails the test if the run ends on its own first.
void KillMidEpoch(const std::vector<std::string>& argv, const std::string& dir,
                  const std::string& capture, uint32_t epoch,
                  std::chrono::microseconds extra_delay = {}) {
  ChildProcess child(argv, capture);
  const bool seen = train_test::PollUntil(
      &child,
      [&] {
        const Position pos = ReadPosition(dir);
        return pos.version > 0 && pos.epochs_done == epoch && pos.next_round > 0;
      },
      std::chrono::seconds(60), std::chrono::microseconds(200));
  ASSERT_TRUE(seen) << "no mid-epoch checkpoint of epoch " << epoch
                    << " seen before the run ended; stderr: " << child.Err();
  std::this_thread::sleep_for(extra_delay);
  child.Kill();
  const ProcessResult r = child.Wait();
  ASSERT_EQ(r.term_signal, SIGKILL) << "the run ended before it was killed; stderr: " << r.err;
}

// --deterministic --threads 1, 3 partitions (9 buckets per epoch): killed
// twice (in epoch 1 and in epoch 2, right after a mid-epoch checkpoint),
// resumed each time by the same command, the final model is bit-identical to
// an uninterrupted run of that command.
TEST_F(TrainKillTest, KilledAndResumedIsBitIdentical) {
  const std::vector<std::string> flags = {"--dim",
                                          "16",
                                          "--epochs",
                                          "2",
                                          "--batch-size",
                                          "500",
                                          "--operator",
                                          "diagonal",
                                          "--buffer-partitions",
                                          "2",
                                          "--checkpoint-every",
                                          "1",
                                          "--seed",
                                          "3",
                                          "--deterministic",
                                          "--threads",
                                          "1"};
  auto expected = UninterruptedModel(flags);
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::string err;

  const std::string dir = NewGraph(3);
  for (uint32_t epoch : {0u, 1u}) {
    SCOPED_TRACE(absl::StrCat("killed in epoch ", epoch + 1));
    KillMidEpoch(TrainArgv(dir, flags), dir, Capture(), epoch);
    if (HasFatalFailure()) return;
    // The manifest names only tables and blobs that exist.
    auto snapshot = LoadSnapshot(dir);
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    EXPECT_EQ(MetricsLines(dir).size(), epoch);
  }
  ExpectRunToTheEnd(dir, flags, *expected, &err);
  EXPECT_THAT(err, HasSubstr("resumed"));
  EXPECT_EQ(MetricsLines(dir).size(), 2u);

  // The binary computes what the library does with the same options (less
  // the mid-epoch checkpoints, which do not change the result:
  // TrainLoopTest.StoppedAndResumedIsBitIdentical).
  const std::string lib_dir = NewGraph(3);
  TrainOptions o = train_test::SmallOptions(2, 3);
  o.model.dim = 16;
  o.model.op = Operator::kDiagonal;
  o.schedule.buffer_partitions = 2;
  o.pipeline.deterministic = true;
  o.devices.threads = 1;
  o.optimizer.lr_auto = true;  // as the binary's default --lr auto: the same probes choose
  ASSERT_TRUE(TrainGraphAutoLr(lib_dir, o).ok());
  auto lib = LoadSnapshot(lib_dir);
  ASSERT_TRUE(lib.ok()) << lib.status();
  train_test::ExpectBitIdentical(*expected, *lib);
}

// The files in `dir`/blobs but the feature vocabulary, sorted: checkpoint
// blobs, and any temporaries of blob writes.
std::vector<std::string> CheckpointBlobs(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/blobs")) {
    const std::string name = e.path().filename().string();
    if (name != kFeatureVocabBlob) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// The version of the first relation blob in `dir`/blobs that the manifest
// does not commit (a checkpoint being written: its temporary or the renamed
// blob before the manifest names it), or 0 when there is none.
uint64_t UncommittedRelationBlob(const std::string& dir) {
  const uint64_t committed = ReadPosition(dir).version;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir + "/blobs", ec)) {
    const std::string name = e.path().filename().string();
    if (name.rfind(kRelationBlobPrefix, 0) != 0) continue;
    const uint64_t version = std::strtoull(name.c_str() + std::strlen(kRelationBlobPrefix),
                                           nullptr, 10);
    if (version > committed) return version;
  }
  return 0;
}

// Starts `argv` and, once the run has committed a checkpoint of its own,
// kills it with SIGKILL as soon as the next one is being written
// (UncommittedRelationBlob), i.e. between its first table write and its
// manifest commit or just after. So the kill lands beside a committed
// checkpoint that the write must leave whole (a first checkpoint killed
// leaves nothing to resume from, and the rerun starts from scratch).
// The kill follows the sighting by `delay`, so that kills at several
// delays land at several steps of the write (blob, table sync, commit).
// Returns whether the kill landed before the commit (the manifest still
// names an older checkpoint).
bool KillWhileCheckpointWritten(const std::vector<std::string>& argv, const std::string& dir,
                                const std::string& capture, std::chrono::microseconds delay) {
  // What an earlier kill left is not a write of this run; the run removes
  // it at start-up, before its first commit.
  const uint64_t committed_before = ReadPosition(dir).version;
  bool committed = false;
  ChildProcess child(argv, capture);
  uint64_t writing = 0;
  const bool seen = train_test::PollUntil(
      &child,
      [&] {
        if (!committed) committed = ReadPosition(dir).version > committed_before;
        if (!committed) return false;
        writing = UncommittedRelationBlob(dir);
        return writing != 0;
      },
      std::chrono::seconds(60), std::chrono::microseconds(0));
  std::this_thread::sleep_for(delay);
  child.Kill();
  const ProcessResult r = child.Wait();
  EXPECT_TRUE(seen) << "no checkpoint write seen before the run ended; stderr: " << r.err;
  EXPECT_EQ(r.term_signal, SIGKILL) << "the run ended before it was killed; stderr: " << r.err;
  return seen && ReadPosition(dir).version < writing;
}

// As above, with kills landing while a checkpoint is being written: its
// relation blob's temporary or the blob itself is there, not yet named by
// the manifest. Each time the graph opens at its last committed checkpoint
// (whole: every table and blob it names is there), the run resumed by the
// same command ends bit-identical to an uninterrupted one, and what the
// interrupted writes left is gone.
TEST_F(TrainKillTest, KilledWhileACheckpointIsWrittenResumesBitIdentical) {
  const std::vector<std::string> flags = {"--dim", "16", "--epochs", "2", "--batch-size", "500",
                                          "--operator", "diagonal", "--buffer-partitions", "2",
                                          "--checkpoint-every", "1", "--seed", "3",
                                          "--deterministic", "--threads", "1", "--lr", "0.1"};
  auto expected = UninterruptedModel(flags);
  ASSERT_TRUE(expected.ok()) << expected.status();
  std::string err;

  const std::string dir = NewGraph(3);
  constexpr int kKills = 8;
  // From the blob's first sighting to past a typical commit here.
  constexpr std::chrono::microseconds kDelays[] = {
      std::chrono::microseconds(0),    std::chrono::microseconds(300),
      std::chrono::microseconds(1000), std::chrono::microseconds(3000)};
  int mid_write = 0;
  for (int k = 0; k < kKills; ++k) {
    SCOPED_TRACE(absl::StrCat("kill ", k + 1));
    const uint64_t before = ReadPosition(dir).version;
    mid_write += KillWhileCheckpointWritten(TrainArgv(dir, flags), dir, Capture(),
                                            kDelays[k % std::size(kDelays)]);
    if (HasFailure()) return;
    auto snapshot = LoadSnapshot(dir);
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
    EXPECT_GT(ReadPosition(dir).version, before);
  }
  std::printf("%d of %d kills landed before the checkpoint's commit\n", mid_write, kKills);
  EXPECT_GE(mid_write, kKills / 2) << "too few kills landed in the middle of a checkpoint write";
  ExpectRunToTheEnd(dir, flags, *expected, &err);
  // The interrupted writes' blobs and temporaries are gone: only the
  // committed checkpoint's relation blob is left.
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(CheckpointBlobs(dir),
            std::vector<std::string>{RelationBlobName(m->training.checkpoint_version)});
}

// Two threads (Hogwild, not bit-reproducible), killed at a seeded random
// moment after its first mid-epoch checkpoint: the resumed run ends with
// the test MRR of an uninterrupted one, within the noise bound that
// train_quality_test.cc justifies.
TEST_F(TrainKillTest, KilledAtRandomAndResumedMatchesUninterruptedMrr) {
  const std::vector<std::string> flags = {"--dim",
                                          "32",
                                          "--epochs",
                                          "3",
                                          "--batch-size",
                                          "500",
                                          "--buffer-partitions",
                                          "2",
                                          "--checkpoint-every",
                                          "1",
                                          "--seed",
                                          "1",
                                          "--threads",
                                          "2"};
  const std::string ref_dir = NewGraph(3);
  std::string err;
  ASSERT_EQ(RunBinary(TrainArgv(ref_dir, flags), Capture(), &err), 0) << err;
  auto ref = train_test::EvalTest(ref_dir);
  ASSERT_TRUE(ref.ok()) << ref.status();

  const std::string dir = NewGraph(3);
  std::mt19937 rng(2024);
  const auto delay = std::chrono::microseconds(rng() % 50000);
  KillMidEpoch(TrainArgv(dir, flags), dir, Capture(), 1, delay);
  if (HasFatalFailure()) return;
  EXPECT_TRUE(LoadSnapshot(dir).ok());
  ASSERT_EQ(RunBinary(TrainArgv(dir, flags), Capture(), &err), 0) << err;
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 3u);
  EXPECT_EQ(MetricsLines(dir).size(), 3u);
  auto resumed = train_test::EvalTest(dir);
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  std::printf("[ MRR ] uninterrupted %.4f, killed+resumed %.4f\n", ref->filtered.mrr,
              resumed->filtered.mrr);
  EXPECT_GT(resumed->filtered.mrr, train_test::kMinSbmMrr);
  EXPECT_NEAR(resumed->filtered.mrr, ref->filtered.mrr, train_test::kMrrNoise);
}

// A featurized model (id rows and the feature table, variance-aware
// batches) killed twice mid-epoch and resumed is bit-identical to an
// uninterrupted run: the feature-table blob commits with the manifest.
TEST_F(TrainKillTest, KilledFeaturizedRunResumesBitIdentical) {
  const std::string features = tmp_->Sub("features.tsv");
  {
    const tools::gen::SbmOptions sbm = train_test::StandardSbm();
    tools::gen::FeaturesOptions fo;
    fo.vocab = 1000;
    fo.seed = 6;
    std::string text;
    for (uint64_t node = 0; node < sbm.nodes; ++node) {
      tools::gen::AppendFeatureLine(fo, sbm.blocks, node, absl::StrCat(node),
                                    sbm.block_of(node), &text);
    }
    train_test::WriteWholeFile(features, text);
  }
  auto import = [&](const std::string& dir) {
    ImportOptions o;
    o.out = dir;
    o.files = {edges_};
    o.node_feature_files = {features};
    o.num_partitions = 3;
    o.split.fraction = {0.9, 0.05, 0.05};
    o.seed = 7;
    o.threads = 2;
    o.delimiter = '\t';
    auto summary = ImportGraph(o);
    EXPECT_TRUE(summary.ok()) << summary.status();
  };
  const std::vector<std::string> flags = {
      "--featurized", "id+features", "--batching", "variance-aware", "--dim", "16",
      "--epochs", "2", "--buffer-partitions", "2", "--checkpoint-every", "1", "--seed", "3",
      "--deterministic", "--threads", "1"};
  const std::string ref_dir = tmp_->Sub("featurized-ref");
  import(ref_dir);
  std::string err;
  ASSERT_EQ(RunBinary(TrainArgv(ref_dir, flags), Capture(), &err), 0) << err;
  auto expected = LoadSnapshot(ref_dir);
  ASSERT_TRUE(expected.ok()) << expected.status();

  const std::string dir = tmp_->Sub("featurized-killed");
  import(dir);
  for (uint32_t epoch : {0u, 1u}) {
    SCOPED_TRACE(absl::StrCat("killed in epoch ", epoch + 1));
    KillMidEpoch(TrainArgv(dir, flags), dir, Capture(), epoch);
    if (HasFatalFailure()) return;
    auto snapshot = LoadSnapshot(dir);  // composes from the committed table
    EXPECT_TRUE(snapshot.ok()) << snapshot.status();
  }
  ASSERT_EQ(RunBinary(TrainArgv(dir, flags), Capture(), &err), 0) << err;
  EXPECT_THAT(err, HasSubstr("resumed"));
  auto got = LoadSnapshot(dir);
  ASSERT_TRUE(got.ok()) << got.status();
  train_test::ExpectBitIdentical(*expected, *got);
  // Kills land right after manifest flips, before the old versions are
  // deleted, and mid-write; the resumed run removed those leftovers: one
  // relation blob and one feature table, both of the committed version.
  const uint64_t version = ManifestOf(dir)->training.checkpoint_version;
  EXPECT_EQ(CheckpointBlobs(dir), (std::vector<std::string>{FeatureTableBlobName(version),
                                                            RelationBlobName(version)}));
}

TEST_F(TrainKillTest, CliRefusesToResumeWithOtherFlags) {
  const std::string dir = NewGraph(3);
  const std::vector<std::string> base = {"--dim", "16", "--epochs", "1", "--threads", "1"};
  std::string err;
  ASSERT_EQ(RunBinary(TrainArgv(dir, base), Capture(), &err), 0) << err;

  std::vector<std::string> other_dim = {"--dim", "24", "--epochs", "2", "--threads", "1"};
  EXPECT_NE(RunBinary(TrainArgv(dir, other_dim), Capture(), &err), 0);
  EXPECT_THAT(err, HasSubstr("--dim 16"));
  EXPECT_THAT(err, HasSubstr("--from-scratch"));

  // --from-scratch accepts it and restarts the epoch count.
  other_dim.push_back("--from-scratch");
  ASSERT_EQ(RunBinary(TrainArgv(dir, other_dim), Capture(), &err), 0) << err;
  auto m = ManifestOf(dir);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(train_test::EpochsDone(*m), 2u);
  EXPECT_EQ(ReadTrainState(*m, dir + "/MANIFEST.json")->model.dim, 24);

  // Mid-epoch, the bucket order is part of the position.
  const std::string mid = NewGraph(3);
  const std::vector<std::string> buffered = {"--dim",
                                             "16",
                                             "--epochs",
                                             "2",
                                             "--buffer-partitions",
                                             "2",
                                             "--checkpoint-every",
                                             "1",
                                             "--threads",
                                             "1",
                                             "--deterministic"};
  KillMidEpoch(TrainArgv(mid, buffered), mid, Capture(), 0);
  if (HasFatalFailure()) return;
  std::vector<std::string> beta = buffered;
  beta.insert(beta.end(), {"--bucket-order", "beta"});
  EXPECT_NE(RunBinary(TrainArgv(mid, beta), Capture(), &err), 0);
  EXPECT_THAT(err, HasSubstr("--bucket-order"));
  ASSERT_EQ(RunBinary(TrainArgv(mid, buffered), Capture(), &err), 0) << err;
}

}  // namespace
}  // namespace ember
