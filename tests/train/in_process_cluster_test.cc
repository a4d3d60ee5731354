// The in-process cluster (train/distributed/cluster.h): N ranks as threads
// of one process, and how a job of them ends (Abort).
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "train/distributed/cluster.h"

namespace ember {
namespace {

constexpr absl::Duration kWait = absl::Seconds(60);  // a bound, not a measured time

// Ranks 1 and 2 wait in a collective and for a partition from rank 0, which
// never comes to either: rank 0 aborts the job instead, and both waits end
// with its reason, as does every later call on every rank.
TEST(InProcessClusterTest, AbortEndsEveryWaitOnEveryRankWithItsReason) {
  auto cluster = InProcessCluster::Create(3);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  const absl::Status reason = absl::DeadlineExceededError("rank 0 is stalled");
  std::vector<absl::Status> gathered(3), received(3);
  std::vector<std::thread> waiting;
  for (uint32_t r : {1u, 2u}) {
    waiting.emplace_back([&, r] {
      Cluster* c = (*cluster)->rank(r);
      TransportHandle h = c->transport()->Receive(0, /*partition=*/r);
      gathered[r] = c->AllGather("x").status();
      received[r] = h.Wait(kWait);
    });
  }
  (*cluster)->rank(0)->Abort(reason);
  (*cluster)->rank(1)->Abort(absl::InternalError("a second reason"));  // the first stands
  for (std::thread& t : waiting) t.join();
  for (uint32_t r : {1u, 2u}) {
    EXPECT_EQ(gathered[r], reason) << "rank " << r;
    EXPECT_EQ(received[r], reason) << "rank " << r;
  }
  Cluster* zero = (*cluster)->rank(0);
  EXPECT_EQ(zero->Barrier(), reason);
  std::vector<double> sums = {1.0};
  EXPECT_EQ(zero->SumDoubles(sums), reason);
  EXPECT_EQ(zero->transport()->Send(1, PartitionState{.partition = 1}).Wait(kWait), reason);
  EXPECT_EQ(zero->transport()->Receive(1, 2).Wait(kWait), reason);
}

// Without an abort, collectives work as before (and repeatedly).
TEST(InProcessClusterTest, CollectivesMeetEveryRank) {
  auto cluster = InProcessCluster::Create(2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::vector<std::vector<std::string>> got(2);
  std::vector<std::thread> ranks;
  for (uint32_t r = 0; r < 2; ++r) {
    ranks.emplace_back([&, r] {
      for (int i = 0; i < 3; ++i) {
        auto all = (*cluster)->rank(r)->AllGather(absl::StrCat(r, ":", i));
        ASSERT_TRUE(all.ok()) << all.status();
        got[r] = *all;
      }
    });
  }
  for (std::thread& t : ranks) t.join();
  EXPECT_EQ(got[0], (std::vector<std::string>{"0:2", "1:2"}));
  EXPECT_EQ(got[1], got[0]);
}

}  // namespace
}  // namespace ember
