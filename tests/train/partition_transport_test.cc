#include "train/distributed/partition_transport.h"

#include <barrier>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "train/distributed/rank_schedule.h"

namespace ember {
namespace {

constexpr absl::Duration kWait = absl::Seconds(60);  // a bound, not a measured time

// Rows whose every float depends on (partition, row, column, version).
PartitionState MakeState(uint32_t p, uint64_t rows, uint32_t dim, float version = 0) {
  PartitionState s;
  s.partition = p;
  s.rows = rows;
  s.dim = dim;
  s.embeddings.resize(rows * dim);
  for (uint64_t i = 0; i < s.embeddings.size(); ++i) {
    s.embeddings[i] = static_cast<float>(p * 1000003 + i) * 0.001f + version;
  }
  s.optimizer.resize(rows);
  for (uint64_t r = 0; r < rows; ++r) s.optimizer[r] = static_cast<float>(p + r) + version;
  return s;
}

std::unique_ptr<InProcessNetwork> Net(uint32_t n, uint64_t chunk) {
  TransportOptions o;
  o.max_chunk_bytes = chunk;
  auto net = InProcessNetwork::Create(n, o);
  EXPECT_TRUE(net.ok()) << net.status();
  return std::move(net).value();
}

TEST(PartitionTransportTest, ChunksNeverExceedTheLimit) {
  EXPECT_TRUE(ChunkBytes(0, 10).empty());
  EXPECT_EQ(ChunkBytes(25, 10), (std::vector<uint64_t>{10, 10, 5}));
  const uint64_t five_gib = uint64_t{5} << 30;
  const std::vector<uint64_t> c = ChunkBytes(five_gib, TransportOptions().max_chunk_bytes);
  uint64_t sum = 0;
  for (uint64_t n : c) {
    EXPECT_LE(n, kMaxMessageBytes);
    EXPECT_GE(n, 1u);
    sum += n;
  }
  EXPECT_EQ(sum, five_gib);
  EXPECT_EQ(c.size(), 3u);
  EXPECT_TRUE(TransportOptions().Validate().ok());
  TransportOptions bad;
  bad.max_chunk_bytes = 0;
  EXPECT_FALSE(bad.Validate().ok());
  bad.max_chunk_bytes = kMaxMessageBytes + 1;
  EXPECT_FALSE(bad.Validate().ok());
  EXPECT_FALSE(InProcessNetwork::Create(2, bad).ok());
}

TEST(PartitionTransportTest, RoundTripInChunksReceivePostedEitherSide) {
  // 1001-byte chunks: not a whole number of floats, so floats span chunks.
  auto net = Net(2, 1001);
  const PartitionState a = MakeState(3, 97, 13);
  const PartitionState b = MakeState(5, 40, 8);
  TransportHandle early = net->rank(1)->Receive(0, 3);  // posted before the send
  EXPECT_FALSE(early.done());
  TransportHandle s1 = net->rank(0)->Send(1, a);
  TransportHandle s2 = net->rank(1)->Send(0, b);
  TransportHandle late = net->rank(0)->Receive(1, 5);  // posted after it
  ASSERT_TRUE(s1.Wait(kWait).ok());
  ASSERT_TRUE(s2.Wait(kWait).ok());
  ASSERT_TRUE(early.Wait(kWait).ok());
  ASSERT_TRUE(late.Wait(kWait).ok());
  EXPECT_EQ(early.TakeState(), a);
  EXPECT_EQ(late.TakeState(), b);
  EXPECT_LE(net->max_message_bytes(), 1001u);
  EXPECT_GT(net->messages(), 2u * 3u);  // header + several chunks each
}

TEST(PartitionTransportTest, StateWithoutIdRowsRoundTrips) {
  auto net = Net(2, 64);
  PartitionState s = MakeState(1, 10, 4);
  s.embeddings.clear();  // FeaturizedMode::kFeatures: no id rows
  TransportHandle r = net->rank(0)->Receive(1, 1);
  ASSERT_TRUE(net->rank(1)->Send(0, s).Wait(kWait).ok());
  ASSERT_TRUE(r.Wait(kWait).ok());
  EXPECT_EQ(r.TakeState(), s);
}

TEST(PartitionTransportTest, RefusesBadPeersAndBadStates) {
  auto net = Net(3, 1 << 20);
  EXPECT_EQ(net->rank(0)->Send(0, MakeState(0, 2, 2)).Wait(kWait).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net->rank(0)->Send(3, MakeState(0, 2, 2)).Wait(kWait).code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(net->rank(2)->Receive(7, 0).Wait(kWait).code(), absl::StatusCode::kInvalidArgument);
  PartitionState torn = MakeState(4, 3, 2);
  torn.embeddings.pop_back();
  absl::Status s = net->rank(0)->Send(1, torn).Wait(kWait);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(s.message()).find("partition 4"), std::string::npos) << s;
  // Two receives of one partition from one peer at once.
  TransportHandle first = net->rank(1)->Receive(0, 9);
  EXPECT_EQ(net->rank(1)->Receive(0, 9).Wait(kWait).code(),
            absl::StatusCode::kFailedPrecondition);
  // A receive nobody sends to stops waiting and says what it waited for.
  absl::Status late = first.Wait(absl::Milliseconds(1));
  EXPECT_EQ(late.code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_NE(std::string(late.message()).find("partition 9 from rank 0"), std::string::npos) << late;
}

TEST(PartitionTransportTest, RingOfFourPassesEveryPartitionOnce) {
  auto net = Net(4, 512);
  std::vector<TransportHandle> recv(4), send(4);
  for (uint32_t r = 0; r < 4; ++r) recv[r] = net->rank(r)->Receive((r + 3) % 4, (r + 3) % 4);
  for (uint32_t r = 0; r < 4; ++r) send[r] = net->rank(r)->Send((r + 1) % 4, MakeState(r, 50, 6));
  for (uint32_t r = 0; r < 4; ++r) {
    ASSERT_TRUE(send[r].Wait(kWait).ok());
    ASSERT_TRUE(recv[r].Wait(kWait).ok());
    EXPECT_EQ(recv[r].TakeState(), MakeState((r + 3) % 4, 50, 6));
  }
}

// Four ranks on four threads follow a RankSchedule's transfer plan for two
// epochs: before each round they send what they hold and others need and
// receive what they need, then "train" (add to every float of each partition
// they train). The end state must equal the same arithmetic done in one
// place without any transport: every byte arrived, in the right place.
TEST(PartitionTransportTest, FourRanksFollowTheTransferPlan) {
  constexpr uint32_t kP = 8, kN = 4, kRows = 33, kDim = 5;
  auto net = Net(kN, 300);
  std::vector<RankSchedule> epochs;
  RankScheduleOptions o;
  o.num_partitions = kP;
  o.world_size = kN;
  o.trainers_per_rank = 1;
  o.order = BucketOrderKind::kInsideOut;
  o.seed = 3;
  for (uint64_t e = 0; e < 2; ++e) {
    o.epoch = e;
    o.holders = epochs.empty() ? std::vector<uint32_t>{} : epochs.back().final_holders;
    absl::StatusOr<RankSchedule> s = ComputeRankSchedule(o);
    ASSERT_TRUE(s.ok()) << s.status();
    epochs.push_back(*std::move(s));
  }
  auto train = [](PartitionState* s, float delta) {
    for (float& x : s->embeddings) x += delta;
    for (float& x : s->optimizer) x += 2 * delta;
  };
  // The reference: no transport.
  std::vector<PartitionState> want;
  for (uint32_t p = 0; p < kP; ++p) want.push_back(MakeState(p, kRows, kDim));
  for (const RankSchedule& s : epochs) {
    for (const GlobalRound& g : s.rounds) {
      for (const RankBucket& b : g.buckets) {
        const float delta = 0.25f * static_cast<float>(g.index + 1);
        train(&want[b.bucket.src], delta);
        if (b.bucket.dst != b.bucket.src) train(&want[b.bucket.dst], delta);
      }
    }
  }
  std::vector<std::map<uint32_t, PartitionState>> held(kN);
  for (uint32_t p = 0; p < kP; ++p) {
    held[epochs[0].initial_holders[p]][p] = MakeState(p, kRows, kDim);
  }
  std::barrier sync(kN);
  std::vector<std::string> errors(kN);
  // After a first error a rank stops waiting long: a broken plan fails fast.
  auto Bound = [&](uint32_t rank) {
    return errors[rank].empty() ? kWait : absl::Milliseconds(1);
  };
  auto run_rank = [&](uint32_t rank) {
    PartitionTransport* t = net->rank(rank);
    for (const RankSchedule& s : epochs) {
      for (const GlobalRound& g : s.rounds) {
        const RankSchedule::Prefetch pf = s.PrefetchFor(rank, g.index);
        std::vector<std::pair<uint32_t, TransportHandle>> recvs;
        for (const Transfer& x : pf.receive) recvs.push_back({x.partition, t->Receive(x.from, x.partition)});
        std::vector<TransportHandle> sends;
        for (const Transfer& x : pf.send) {
          auto it = held[rank].find(x.partition);
          if (it == held[rank].end()) {
            errors[rank] += absl::StrCat("rank ", rank, " must send ", x.partition,
                                         " but does not hold it; ");
            continue;
          }
          sends.push_back(t->Send(x.to, std::move(it->second)));
          held[rank].erase(it);
        }
        for (TransportHandle& h : sends) {
          if (absl::Status st = h.Wait(Bound(rank)); !st.ok()) errors[rank] += st.ToString();
        }
        for (auto& [p, h] : recvs) {
          if (absl::Status st = h.Wait(Bound(rank)); !st.ok()) {
            errors[rank] += st.ToString();
          } else {
            held[rank][p] = h.TakeState();
          }
        }
        for (const Bucket& b : s.BucketsOf(rank, g.index)) {
          const float delta = 0.25f * static_cast<float>(g.index + 1);
          std::vector<uint32_t> parts = {b.src};
          if (b.dst != b.src) parts.push_back(b.dst);
          for (uint32_t p : parts) {
            auto it = held[rank].find(p);
            if (it == held[rank].end()) {
              errors[rank] += absl::StrCat("rank ", rank, " trains ", p, " without it; ");
            } else {
              train(&it->second, delta);
            }
          }
        }
        sync.arrive_and_wait();  // the round boundary
      }
    }
  };
  std::vector<std::thread> threads;
  for (uint32_t r = 0; r < kN; ++r) threads.emplace_back(run_rank, r);
  for (std::thread& th : threads) th.join();
  for (uint32_t r = 0; r < kN; ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
  uint32_t count = 0;
  for (uint32_t r = 0; r < kN; ++r) {
    for (auto& [p, st] : held[r]) {
      ++count;
      EXPECT_EQ(epochs.back().final_holders[p], r) << "partition " << p;
      EXPECT_EQ(st, want[p]) << "partition " << p << " on rank " << r;
    }
  }
  EXPECT_EQ(count, kP);
  EXPECT_LE(net->max_message_bytes(), 300u);
  uint64_t moves = 0;
  for (const RankSchedule& s : epochs) {
    for (const GlobalRound& g : s.rounds) moves += g.transfers.size();
  }
  EXPECT_GT(moves, 0u);
  std::printf("2 epochs, P=%u, N=%u: %llu partition moves, %llu messages\n", kP, kN,
              static_cast<unsigned long long>(moves),
              static_cast<unsigned long long>(net->messages()));
}

}  // namespace
}  // namespace ember
