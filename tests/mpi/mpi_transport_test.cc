// MpiTransport between the ranks of the mpirun that started this binary
// (2 or 4 ranks, shared memory or TCP: tests/CMakeLists.txt). Every
// partition's contents come from a generator seeded by who sent it, so the
// receiver checks them bit for bit against what the sender must have sent.
#include "train/distributed/mpi/internal/mpi_transport.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "tests/mpi/mpi_test_env.h"

namespace ember {
namespace {

constexpr absl::Duration kWait = absl::Seconds(60);  // a bound, not a measured time
// Partitions each rank sends round the ring.
constexpr uint32_t kPerRank = 8;

// Waits for `handle` and fails the test, with its status, unless it is OK.
#define ASSERT_OK_AND_WAIT(handle)                                   \
  do {                                                               \
    const absl::Status wait_status = (handle).Wait(kWait);           \
    ASSERT_TRUE(wait_status.ok()) << #handle << ": " << wait_status; \
  } while (0)

// The k-th partition rank `sender` sends round the ring: id sender * kPerRank
// + k, shape by k % 4 (no rows; embeddings only; optimizer only; both),
// sizes and floats drawn from a generator seeded by (sender, k, salt).
PartitionState RingPartition(uint32_t sender, uint32_t k, uint32_t max_rows, uint32_t salt = 0) {
  std::mt19937_64 rng(uint64_t{sender} * 1000003 + k * 7919 + salt);
  PartitionState s;
  s.partition = sender * kPerRank + k;
  s.dim = std::uniform_int_distribution<uint32_t>(1, 9)(rng);
  if (k % 4 == 0) return s;  // 0 rows
  s.rows = std::uniform_int_distribution<uint64_t>(1, max_rows)(rng);
  std::uniform_real_distribution<float> value(-2.0f, 2.0f);
  if (k % 4 != 2) {
    s.embeddings.resize(s.rows * s.dim);
    for (float& x : s.embeddings) x = value(rng);
  }
  if (k % 4 != 1) {
    s.optimizer.resize(s.rows);
    for (float& x : s.optimizer) x = value(rng);
  }
  return s;
}

// Every rank sends kPerRank partitions to the next rank and receives the
// previous rank's: half the receives posted before any send, half after
// every send is posted.
void RunRing(PartitionTransport* transport, uint32_t max_rows) {
  Cluster& cluster = TestCluster();
  const uint32_t n = transport->world_size();
  const uint32_t me = transport->rank();
  const uint32_t next = (me + 1) % n;
  const uint32_t prev = (me + n - 1) % n;
  std::vector<TransportHandle> receives(kPerRank);
  for (uint32_t k = 0; k < kPerRank; k += 2) {
    receives[k] = transport->Receive(prev, prev * kPerRank + k);
  }
  ASSERT_TRUE(cluster.Barrier().ok());  // every early receive is posted
  std::vector<TransportHandle> sends;
  for (uint32_t k = 0; k < kPerRank; ++k) {
    sends.push_back(transport->Send(next, RingPartition(me, k, max_rows)));
  }
  ASSERT_TRUE(cluster.Barrier().ok());  // every send is posted
  for (uint32_t k = 1; k < kPerRank; k += 2) {
    receives[k] = transport->Receive(prev, prev * kPerRank + k);
  }
  for (uint32_t k = 0; k < kPerRank; ++k) {
    const absl::Status s = receives[k].Wait(kWait);
    ASSERT_TRUE(s.ok()) << "partition " << k << ": " << s;
    const PartitionState expected = RingPartition(prev, k, max_rows);
    const PartitionState got = receives[k].TakeState();
    EXPECT_EQ(got.partition, expected.partition);
    EXPECT_EQ(got.rows, expected.rows) << "partition " << expected.partition;
    EXPECT_TRUE(got == expected) << "partition " << expected.partition << " differs";
  }
  for (TransportHandle& send : sends) {
    const absl::Status s = send.Wait(kWait);
    ASSERT_TRUE(s.ok()) << s;
  }
  ASSERT_TRUE(cluster.Barrier().ok());
}

TEST(MpiTransportTest, RingInChunksOf4096Bytes) {
  // Up to 400 rows of up to 9 floats: up to 14 KiB, several chunks.
  ASSERT_EQ(TestCluster().transport()->world_size(), TestCluster().world_size());
  RunRing(TestCluster().transport(), 400);
}

TEST(MpiTransportTest, RingInChunksOfOneByte) {
  TransportOptions options;
  options.max_chunk_bytes = 1;  // every byte, the header's too, its own message
  auto transport = MpiTransport::Start(MPI_COMM_WORLD, options);
  ASSERT_TRUE(transport.ok()) << transport.status();
  RunRing(transport->get(), 12);
}

TEST(MpiTransportTest, TwoPartitionsInFlightBetweenOnePair) {
  Cluster& cluster = TestCluster();
  PartitionTransport* t = cluster.transport();
  const uint32_t me = t->rank();
  const uint32_t partner = me ^ 1;
  if (partner >= t->world_size()) GTEST_SKIP() << "the last rank of an odd world has no pair";
  // Partitions 1000 + 2r, 1001 + 2r: 300 rows of up to 9 floats, several
  // chunks each, both posted before either is received; received in the
  // opposite order.
  const uint32_t a = 1000 + 2 * me, b = a + 1;
  auto make = [](uint32_t id, uint32_t sender) {
    PartitionState s = RingPartition(sender, 3, 300, /*salt=*/id);
    s.partition = id;
    return s;
  };
  TransportHandle send_a = t->Send(partner, make(a, me));
  TransportHandle send_b = t->Send(partner, make(b, me));
  const uint32_t pa = 1000 + 2 * partner, pb = pa + 1;
  TransportHandle receive_b = t->Receive(partner, pb);
  TransportHandle receive_a = t->Receive(partner, pa);
  ASSERT_OK_AND_WAIT(receive_b);
  ASSERT_OK_AND_WAIT(receive_a);
  EXPECT_TRUE(receive_a.TakeState() == make(pa, partner));
  EXPECT_TRUE(receive_b.TakeState() == make(pb, partner));
  ASSERT_OK_AND_WAIT(send_a);
  ASSERT_OK_AND_WAIT(send_b);
}

TEST(MpiTransportTest, OnePartitionAgainAfterItArrived) {
  // The same partition between the same pair twice in a row: the second
  // transfer reads the second send, not left-overs of the first.
  PartitionTransport* t = TestCluster().transport();
  const uint32_t n = t->world_size(), me = t->rank();
  const uint32_t next = (me + 1) % n, prev = (me + n - 1) % n;
  for (uint32_t round = 0; round < 2; ++round) {
    PartitionState mine = RingPartition(me, 3, 50, /*salt=*/round);
    mine.partition = 2000;
    TransportHandle send = t->Send(next, mine);
    TransportHandle receive = t->Receive(prev, 2000);
    ASSERT_OK_AND_WAIT(receive);
    PartitionState expected = RingPartition(prev, 3, 50, round);
    expected.partition = 2000;
    EXPECT_TRUE(receive.TakeState() == expected) << "round " << round;
    ASSERT_OK_AND_WAIT(send);
  }
  ASSERT_TRUE(TestCluster().Barrier().ok());
}

TEST(MpiTransportTest, SecondPendingReceiveOfOnePartitionIsRefused) {
  PartitionTransport* t = TestCluster().transport();
  const uint32_t n = t->world_size(), me = t->rank();
  const uint32_t next = (me + 1) % n, prev = (me + n - 1) % n;
  TransportHandle first = t->Receive(prev, 3000);
  TransportHandle second = t->Receive(prev, 3000);
  EXPECT_TRUE(second.done());
  EXPECT_EQ(second.Wait(kWait).code(), absl::StatusCode::kFailedPrecondition);
  // Only now may the sender send: had `first` completed before `second` was
  // posted, `second` would be a receive of its own, rightly accepted.
  ASSERT_TRUE(TestCluster().Barrier().ok());
  PartitionState mine = RingPartition(me, 1, 5);
  mine.partition = 3000;
  TransportHandle send = t->Send(next, mine);
  ASSERT_OK_AND_WAIT(first);
  EXPECT_EQ(first.TakeState().rows, RingPartition(prev, 1, 5).rows);
  ASSERT_OK_AND_WAIT(send);
}

TEST(MpiTransportTest, BadPeerOrPartitionGivesAFailedHandle) {
  PartitionTransport* t = TestCluster().transport();
  const uint32_t n = t->world_size(), me = t->rank();
  for (uint32_t bad : {me, n, n + 7}) {
    TransportHandle send = t->Send(bad, RingPartition(me, 1, 5));
    EXPECT_TRUE(send.done());
    const absl::Status s = send.Wait(kWait);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_NE(s.message().find("rank"), std::string::npos) << s;
    EXPECT_EQ(t->Receive(bad, 1).Wait(kWait).code(), absl::StatusCode::kInvalidArgument);
  }
  // A partition id no MPI tag can carry.
  PartitionState huge = RingPartition(me, 1, 5);
  huge.partition = 0xFFFFFFFFu;
  EXPECT_EQ(t->Send((me + 1) % n, huge).Wait(kWait).code(), absl::StatusCode::kInvalidArgument);
  // A state whose vectors disagree with its rows.
  PartitionState torn = RingPartition(me, 1, 5);
  torn.rows += 1;
  EXPECT_EQ(t->Send((me + 1) % n, torn).Wait(kWait).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace ember
