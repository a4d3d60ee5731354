// ClusterSync's sums across ranks (train/distributed/cluster_sync.h), with
// the in-process cluster: relation changes and changed feature rows.
#include "train/distributed/cluster_sync.h"

#include <functional>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

// Runs body(rank) on one thread per rank.
void OnRanks(uint32_t n, const std::function<void(uint32_t)>& body) {
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < n; ++r) threads.emplace_back(body, r);
  for (std::thread& t : threads) t.join();
}

FeatureTable Table(uint32_t rows, int dim) {
  FeatureTable t;
  t.rows = rows;
  t.dim = dim;
  t.embeddings.resize(size_t{rows} * dim);
  for (size_t i = 0; i < t.embeddings.size(); ++i) t.embeddings[i] = 0.25f * float(i);
  t.optimizer.assign(rows, 1.0f);
  return t;
}

// Rank 0 changes rows 1 and 2, rank 1 rows 2 and 3: afterwards both hold
// the start plus both changes, row 2 with the two changes added, and rows
// nobody changed as they were; only changed rows travelled.
TEST(ClusterSyncTest, FeatureRowsChangedOnEitherRankAreSummedOnBoth) {
  const FeatureTable start = Table(5, 3);
  auto cluster = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::vector<FeatureTable> tables(2, start);
  std::vector<absl::Status> status(2);
  OnRanks(2, [&](uint32_t r) {
    auto sync = MakeClusterSync((*cluster)->rank(r), /*deterministic=*/true, 2, &start);
    FeatureTable& t = tables[r];
    for (uint32_t f : r == 0 ? std::vector<uint32_t>{1, 2} : std::vector<uint32_t>{2, 3}) {
      for (int i = 0; i < t.dim; ++i) t.Row(f)[i] += 1.0f + r;
      t.optimizer[f] += 10.0f * (r + 1);
    }
    status[r] = sync->SyncFeatures({}, &t);
  });
  ASSERT_TRUE(status[0].ok()) << status[0];
  ASSERT_TRUE(status[1].ok()) << status[1];
  FeatureTable want = start;
  for (int i = 0; i < 3; ++i) {
    want.Row(1)[i] += 1;
    want.Row(2)[i] += 1;
    want.Row(2)[i] += 2;
    want.Row(3)[i] += 2;
  }
  want.optimizer[1] += 10;
  want.optimizer[2] += 30;
  want.optimizer[3] += 20;
  for (uint32_t r = 0; r < 2; ++r) {
    EXPECT_EQ(tables[r].embeddings, want.embeddings) << "rank " << r;
    EXPECT_EQ(tables[r].optimizer, want.optimizer) << "rank " << r;
  }
  // A second round from the agreed table: one change on rank 1 only.
  OnRanks(2, [&](uint32_t r) {
    auto sync = MakeClusterSync((*cluster)->rank(r), true, 2, &want);
    FeatureTable& t = tables[r];
    if (r == 1) t.Row(4)[0] += 5;
    status[r] = sync->SyncFeatures({}, &t);
  });
  ASSERT_TRUE(status[0].ok()) << status[0];
  EXPECT_EQ(tables[0].Row(4)[0], want.Row(4)[0] + 5);
  EXPECT_EQ(tables[0].embeddings, tables[1].embeddings);
}

TEST(ClusterSyncTest, ATableOfAnotherShapeIsRefused) {
  const FeatureTable start = Table(5, 3);
  auto cluster = InProcessCluster::Create(1);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto sync = MakeClusterSync((*cluster)->rank(0), true, 1, &start);
  FeatureTable other = Table(4, 3);
  EXPECT_EQ(sync->SyncFeatures({}, &other).code(), absl::StatusCode::kInternal);
}

}  // namespace
}  // namespace ember
