// Test helpers for storage/: temp directories and a small hand-built graph.
#ifndef EMBER_TESTS_STORAGE_TEST_GRAPH_H_
#define EMBER_TESTS_STORAGE_TEST_GRAPH_H_

#include <stdlib.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "storage/graph_builder.h"
#include "storage/internal/keys.h"
#include "storage/manifest.h"
#include "storage/base/node_hash.h"
#include "storage/types.h"

namespace ember::testing {

// A fresh directory, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir() {
    const char* base = std::getenv("TEST_TMPDIR");
    std::string tmpl = std::string(base != nullptr ? base : "/tmp") +
                       "/ember_storage_test_XXXXXX";
    EXPECT_NE(::mkdtemp(tmpl.data()), nullptr);
    path_ = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// What a test graph holds, to compare against what Graph reads back.
struct ExpectedGraph {
  Manifest manifest;
  std::vector<std::string> names;  // by global id
  // (split, src_part, dst_part) -> edges in block order.
  std::map<std::tuple<int, uint32_t, uint32_t>, std::vector<Edge>> buckets;
};

struct TestGraphOptions {
  std::vector<uint64_t> partition_sizes = {4, 3, 5};
  bool integer_ids = false;
  uint64_t edges_per_split[kNumSplits] = {400, 60, 40};
  uint32_t edges_per_block = 7;
  uint32_t seed = 42;
};

// Sorted (key, value) pairs, dealt round-robin into `runs` runs so that runs
// overlap in key range but never share a key.
inline absl::Status WriteRuns(GraphBuilder* builder, RunTarget target,
                              uint32_t partition,
                              std::vector<std::pair<std::string, std::string>> kv,
                              int runs) {
  std::sort(kv.begin(), kv.end());
  for (int r = 0; r < runs; ++r) {
    auto writer = builder->NewRun(target, partition);
    if (!writer.ok()) return writer.status();
    for (size_t i = r; i < kv.size(); i += runs) {
      absl::Status s = (*writer)->Add(kv[i].first, kv[i].second);
      if (!s.ok()) return s;
    }
    absl::Status s = (*writer)->Finish();
    if (!s.ok()) return s;
  }
  return absl::OkStatus();
}

// Builds a graph with named nodes and random edges into the builder's runs
// (three overlapping runs per target, dict runs from two threads) and
// returns what it wrote; the caller commits expected.manifest.
inline ExpectedGraph FillTestGraph(GraphBuilder* builder,
                                   const TestGraphOptions& o) {
  ExpectedGraph g;
  Manifest& m = g.manifest;
  m.num_partitions = static_cast<uint32_t>(o.partition_sizes.size());
  m.partition_sizes = o.partition_sizes;
  for (uint64_t s : o.partition_sizes) m.num_nodes += s;
  m.relations = {"follows", "likes"};
  m.integer_ids = o.integer_ids;
  m.seed = o.seed;
  m.train_bucket_edges.assign(m.num_partitions * m.num_partitions, 0);
  m.training.state = R"({"state":{"lr":0.1}})";

  std::vector<std::pair<std::string, std::string>> by_name, by_id;
  std::vector<std::vector<std::pair<std::string, std::string>>> nodes(
      m.num_partitions);
  uint64_t gid = 0;
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    for (uint32_t off = 0; off < m.partition_sizes[p]; ++off, ++gid) {
      std::string name = o.integer_ids ? std::to_string(1000 + 7 * gid)
                                       : "node-" + std::to_string(gid);
      const uint64_t key = o.integer_ids ? IntegerNodeKey(1000 + 7 * gid)
                                         : StringNodeKey(name);
      const uint64_t packed = PackNodeRef({p, off});
      by_name.emplace_back(DictNameKey(key, name), EncodeU64(packed));
      by_id.emplace_back(DictIdKey(packed), name);
      nodes[p].emplace_back(NodeOffsetKey(off), name);
      g.names.push_back(name);
    }
  }

  std::mt19937_64 rng(o.seed);
  std::vector<std::vector<std::pair<std::string, std::string>>> edge_kv(
      m.num_partitions);
  for (Split split : kAllSplits) {
    std::map<std::pair<uint32_t, uint32_t>, std::vector<Edge>> raw;
    for (uint64_t e = 0; e < o.edges_per_split[static_cast<int>(split)]; ++e) {
      const uint32_t i = rng() % m.num_partitions;
      const uint32_t j = rng() % m.num_partitions;
      if (m.partition_sizes[i] == 0 || m.partition_sizes[j] == 0) continue;
      raw[{i, j}].push_back(
          Edge{static_cast<uint32_t>(rng() % m.partition_sizes[i]),
               static_cast<uint32_t>(rng() % 2),
               static_cast<uint32_t>(rng() % m.partition_sizes[j])});
      m.edges[split]++;
      if (split == Split::kTrain) {
        m.train_bucket_edges[i * m.num_partitions + j]++;
      }
    }
    for (auto& [ij, edges] : raw) {
      uint64_t seq = 0;
      for (size_t b = 0; b < edges.size(); b += o.edges_per_block, ++seq) {
        std::span<const Edge> block(
            edges.data() + b,
            std::min<size_t>(o.edges_per_block, edges.size() - b));
        edge_kv[ij.first].emplace_back(EdgeBlockKey(split, ij.second, seq),
                                       EncodeEdgeBlock(block));
      }
      g.buckets[{static_cast<int>(split), ij.first, ij.second}] = edges;
    }
  }
  m.degree = DegreeStats{1, 20, 5.5, 4, 16, 16};

  // Dict runs from two threads at once: NewRun is thread-safe.
  absl::Status s1, s2;
  std::thread t1([&] { s1 = WriteRuns(builder, RunTarget::kDictByName, 0,
                                      by_name, 3); });
  std::thread t2([&] { s2 = WriteRuns(builder, RunTarget::kDictById, 0,
                                      by_id, 3); });
  t1.join();
  t2.join();
  EXPECT_TRUE(s1.ok()) << s1;
  EXPECT_TRUE(s2.ok()) << s2;
  for (uint32_t p = 0; p < m.num_partitions; ++p) {
    absl::Status s = WriteRuns(builder, RunTarget::kShardNodes, p, nodes[p], 2);
    EXPECT_TRUE(s.ok()) << s;
    s = WriteRuns(builder, RunTarget::kShardEdges, p, edge_kv[p], 3);
    EXPECT_TRUE(s.ok()) << s;
  }
  return g;
}

// Creates, fills and commits a test graph at `out`.
inline ExpectedGraph BuildTestGraph(const std::string& out,
                                    const TestGraphOptions& o = {}) {
  GraphBuilderOptions bo;
  bo.num_partitions = static_cast<uint32_t>(o.partition_sizes.size());
  auto builder = GraphBuilder::Create(out, bo);
  EXPECT_TRUE(builder.ok()) << builder.status();
  if (!builder.ok()) return {};
  ExpectedGraph g = FillTestGraph(builder->get(), o);
  absl::Status s = (*builder)->Commit(g.manifest);
  EXPECT_TRUE(s.ok()) << s;
  return g;
}

}  // namespace ember::testing

#endif  // EMBER_TESTS_STORAGE_TEST_GRAPH_H_
