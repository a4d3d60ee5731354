// Test helpers for `ember train`: planted-partition (SBM) graphs imported
// with any partition count, small training options, evaluation, exact
// snapshots of a stored model, and running the `ember` binary.
#ifndef EMBER_TESTS_TRAIN_TRAIN_TEST_UTIL_H_
#define EMBER_TESTS_TRAIN_TRAIN_TEST_UTIL_H_


#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "storage/graph.h"
#include "storage/manifest.h"
#include "storage/base/status_macros.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"
#include "tools/gen/sbm_generator.h"
#include "train/model/checkpoint.h"
#include "train/model/train_state.h"
#include "train/eval/evaluator.h"
#include "train/train_loop.h"
#include "train/options/train_options.h"

namespace ember::train_test {

using ::ember::testing::ReadWholeFile;
using ::ember::testing::TempDir;

inline void WriteWholeFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// Writes the SBM's edges ("src\tdst" lines) to `path`.
inline void WriteSbmEdges(const tools::gen::SbmOptions& sbm, const std::string& path) {
  ASSERT_TRUE(sbm.Validate().ok()) << sbm.Validate();
  std::string text;
  for (uint64_t c = 0; c < sbm.num_chunks(); ++c) {
    tools::gen::AppendSbmChunkText(sbm, c, &text);
  }
  WriteWholeFile(path, text);
}

// Imports the edge file(s) into `out` with `partitions` partitions, 90% of
// the edges train, 5% valid and 5% test. The split of an edge depends on
// the import seed and its endpoints only, so imports of the same file with
// different partition counts hold the same test edges.
inline absl::StatusOr<ImportSummary> ImportEdges(const std::string& out,
                                                 const std::vector<std::string>& files,
                                                 uint32_t partitions, bool with_splits = true) {
  ImportOptions o;
  o.out = out;
  o.files = files;
  o.num_partitions = partitions;
  if (with_splits) o.split.fraction = {0.9, 0.05, 0.05};
  o.seed = 7;
  o.threads = 2;
  o.delimiter = '\t';
  return ImportGraph(o);
}

// Fresh graph directories holding the same import: each partition count is
// imported once (an import syncs its files, which is slow on a busy disk)
// and copied for every graph asked for.
class GraphFactory {
 public:
  GraphFactory(std::string root, std::vector<std::string> files, bool with_splits = true)
      : root_(std::move(root)), files_(std::move(files)), with_splits_(with_splits) {}

  // A new graph directory under the root; "" (and a test failure) on error.
  std::string New(uint32_t partitions) {
    auto it = imports_.find(partitions);
    if (it == imports_.end()) {
      const std::string dir = absl::StrCat(root_, "/import-p", partitions);
      auto summary = ImportEdges(dir, files_, partitions, with_splits_);
      EXPECT_TRUE(summary.ok()) << summary.status();
      if (!summary.ok()) return "";
      it = imports_.emplace(partitions, std::make_pair(dir, *summary)).first;
    }
    const std::string dir = absl::StrCat(root_, "/g", next_++);
    std::error_code ec;
    std::filesystem::copy(it->second.first, dir, std::filesystem::copy_options::recursive, ec);
    EXPECT_FALSE(ec) << "copy to " << dir << ": " << ec.message();
    return ec ? "" : dir;
  }
  const ImportSummary& summary(uint32_t partitions) const { return imports_.at(partitions).second; }

 private:
  std::string root_;
  std::vector<std::string> files_;
  bool with_splits_;
  std::map<uint32_t, std::pair<std::string, ImportSummary>> imports_;
  int next_ = 0;
};

// The SBM used by the quality and resume tests: 2000 nodes in 20 blocks of
// 100, average degree 20 (20000 edges), 10% of edges between blocks.
inline tools::gen::SbmOptions StandardSbm() {
  tools::gen::SbmOptions sbm;
  sbm.nodes = 2000;
  sbm.blocks = 20;
  sbm.avg_degree = 20;
  sbm.mixing = 0.1;
  sbm.seed = 3;
  return sbm;
}

// Bounds on the filtered test MRR of StandardSbm, trained with
// SmallOptions for 5 epochs; train_quality_test.cc justifies them.
inline constexpr double kMinSbmMrr = 0.03;

// Chance level of MRR when every one of n nodes is a candidate: a random
// model ranks the true answer uniformly in 1..n, so MRR = H_n / n (about
// 0.0041 for n = 2000; filtering removes a few candidates, which changes it
// little).
inline double ChanceMrr(uint64_t n) {
  double h = 0;
  for (uint64_t k = 1; k <= n; ++k) h += 1.0 / k;
  return h / n;
}
inline constexpr double kMrrNoise = 0.01;

// Small, quick options: dim 32, batches of 500 edges.
inline TrainOptions SmallOptions(int epochs, uint64_t seed = 1) {
  TrainOptions o;
  o.model.dim = 32;
  o.epochs = epochs;
  o.pipeline.batch_size = 500;
  o.seed = seed;
  o.devices.threads = 1;
  return o;
}

// The epochs done that m's training state records (0 without a
// checkpoint); a state that does not read fails the test.
inline uint32_t EpochsDone(const Manifest& m) {
  if (m.training.checkpoint_version == 0) return 0;
  const absl::StatusOr<TrainState> s = ReadTrainState(m, "MANIFEST.json");
  EXPECT_TRUE(s.ok()) << s.status();
  return s.ok() ? s->epochs_done : ~0u;
}

inline absl::StatusOr<Manifest> ManifestOf(const std::string& dir) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::Open(dir));
  return g->manifest();
}

// Evaluates the stored model of `dir` on its test split.
inline absl::StatusOr<EvalResult> EvalTest(const std::string& dir, uint64_t negatives = 0) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::Open(dir));
  ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(*g));
  EvalOptions eo;
  eo.split = Split::kTest;
  eo.negatives = negatives;
  eo.seed = 5;
  eo.threads = 2;
  return Evaluate(*g, model, eo);
}

// A training run and its test split ranked against every node (EvalTest).
struct TrainedRun {
  TrainSummary summary;
  EvalResult eval;
  double mrr() const { return eval.filtered.mrr; }
};

// Trains `options` on the graph at `dir`, then evaluates it. A failure is a
// test failure and leaves the failed part default.
inline TrainedRun TrainAndEvaluate(const std::string& dir, const TrainOptions& options) {
  TrainedRun r;
  auto summary = TrainGraph(dir, options);
  EXPECT_TRUE(summary.ok()) << summary.status();
  if (!summary.ok()) return r;
  r.summary = *summary;
  auto eval = EvalTest(dir);
  EXPECT_TRUE(eval.ok()) << eval.status();
  if (eval.ok()) r.eval = *eval;
  return r;
}

// Everything a stored model holds, read back through the public API.
struct ModelSnapshot {
  ModelOptions model;
  std::vector<float> relation_params;
  std::vector<std::vector<float>> partitions;  // embeddings per partition
};

// Loads the stored model and every partition's embeddings; fails if the
// manifest names a table or blob that is not there.
inline absl::StatusOr<ModelSnapshot> LoadSnapshot(const std::string& dir) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> g, Graph::Open(dir));
  ASSIGN_OR_RETURN(StoredModel model, LoadStoredModel(*g));
  ModelSnapshot s;
  s.model = model.model;
  s.relation_params = model.relations.params;
  for (uint32_t p = 0; p < g->manifest().num_partitions; ++p) {
    auto rows = LoadPartitionEmbeddings(*g, model, p);
    if (!rows.ok()) {
      return absl::Status(rows.status().code(), absl::StrCat("partition ", p, " (table version ",
                                                             model.partition_versions[p], ") of ",
                                                             dir, ": ", rows.status().ToString()));
    }
    s.partitions.push_back(std::move(*rows));
  }
  return s;
}

inline bool AllFinite(const std::vector<float>& v) {
  for (float x : v) {
    if (!std::isfinite(x)) return false;
  }
  return true;
}

// Bit-for-bit comparison of every partition and the relation parameters.
inline void ExpectBitIdentical(const ModelSnapshot& a, const ModelSnapshot& b) {
  ASSERT_EQ(a.partitions.size(), b.partitions.size());
  for (size_t p = 0; p < a.partitions.size(); ++p) {
    ASSERT_EQ(a.partitions[p].size(), b.partitions[p].size()) << "partition " << p;
    size_t first_diff = a.partitions[p].size();
    for (size_t i = 0; i < a.partitions[p].size(); ++i) {
      if (std::memcmp(&a.partitions[p][i], &b.partitions[p][i], sizeof(float)) != 0) {
        first_diff = i;
        break;
      }
    }
    EXPECT_TRUE(a.partitions[p].empty() ||
                std::memcmp(a.partitions[p].data(), b.partitions[p].data(),
                            a.partitions[p].size() * sizeof(float)) == 0)
        << "embeddings of partition " << p << " differ, first at float #" << first_diff << ": "
        << (first_diff < a.partitions[p].size()
                ? absl::StrCat(a.partitions[p][first_diff], " vs ", b.partitions[p][first_diff])
                : std::string());
  }
  ASSERT_EQ(a.relation_params.size(), b.relation_params.size());
  // memcmp, not ==: bit-identical, and NaN == NaN here. Empty vectors may
  // hold null data, which memcmp must not see.
  EXPECT_TRUE(a.relation_params.empty() ||
              std::memcmp(a.relation_params.data(), b.relation_params.data(),
                          a.relation_params.size() * sizeof(float)) == 0)
      << "relation parameters differ";
}

// Lines of GRAPH/metrics.jsonl.
inline std::vector<std::string> MetricsLines(const std::string& dir) {
  std::vector<std::string> lines;
  std::ifstream in(dir + "/metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

using ::ember::testing::ChildProcess;
using ::ember::testing::PollUntil;
using ::ember::testing::ProcessResult;

// Runs to completion; returns the exit code (-signal when killed) and fills
// `err` with its stderr.
inline int RunBinary(const std::vector<std::string>& argv, const std::string& capture_prefix,
                     std::string* err = nullptr) {
  ChildProcess child(argv, capture_prefix);
  const ProcessResult r = child.Wait();
  if (err != nullptr) *err = r.err;
  return r.term_signal != 0 ? -r.term_signal : r.exit_code;
}

}  // namespace ember::train_test

#endif  // EMBER_TESTS_TRAIN_TRAIN_TEST_UTIL_H_
