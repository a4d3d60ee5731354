// The MPI cluster's collectives, on every rank of the mpirun that started
// this binary; each rank's input comes from a generator seeded by its rank,
// so each rank can compute what every other rank contributed.
#include "train/distributed/mpi/internal/mpi_collectives.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/mpi/mpi_test_env.h"

// MPI's profiling interface: these take the place of the library's
// MPI_Allgather, MPI_Allgatherv and MPI_Allreduce in this binary, note the
// bytes each call moves into a rank's receive buffer while a CallRecorder
// is alive, and call the library's PMPI_ versions.
namespace {
std::atomic<bool> g_recording{false};
std::atomic<uint64_t> g_largest_call_bytes{0};
std::atomic<uint64_t> g_calls{0};

int Note(uint64_t count, MPI_Datatype type) {
  int size = 0;
  PMPI_Type_size(type, &size);
  if (g_recording.load()) {
    const uint64_t bytes = count * static_cast<uint64_t>(size);
    uint64_t seen = g_largest_call_bytes.load();
    while (bytes > seen && !g_largest_call_bytes.compare_exchange_weak(seen, bytes)) {
    }
    ++g_calls;
  }
  return MPI_SUCCESS;
}
}  // namespace

extern "C" int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  int ranks = 0;
  PMPI_Comm_size(comm, &ranks);
  Note(uint64_t(recvcount) * ranks, recvtype);
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

extern "C" int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                              void* recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm) {
  int ranks = 0;
  PMPI_Comm_size(comm, &ranks);
  uint64_t count = 0;
  for (int r = 0; r < ranks; ++r) count += recvcounts[r];
  Note(count, recvtype);
  return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
}

extern "C" int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm) {
  Note(count, datatype);
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

namespace ember {
namespace {

// While alive, the largest call of the collectives above, in bytes, and
// how many there were.
class CallRecorder {
 public:
  CallRecorder() {
    g_largest_call_bytes = 0;
    g_calls = 0;
    g_recording = true;
  }
  ~CallRecorder() { g_recording = false; }
  uint64_t largest() const { return g_largest_call_bytes.load(); }
  uint64_t calls() const { return g_calls.load(); }
};

// Rank r's string: empty for r % 3 == 0, else r * 1000 + 7 bytes of every
// byte value.
std::string StringOf(uint32_t r) {
  if (r % 3 == 0) return "";
  std::string s(r * 1000 + 7, '\0');
  for (size_t i = 0; i < s.size(); ++i) s[i] = static_cast<char>((i * 31 + r) & 0xff);
  return s;
}

// Rank r's doubles: signs and magnitudes over 2^-40 .. 2^40, so that the
// order of the additions shows in the bits.
std::vector<double> DoublesOf(uint32_t r, size_t n) {
  std::mt19937_64 rng(1234 + r);
  std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
  std::uniform_int_distribution<int> exponent(-40, 40);
  std::vector<double> v(n);
  for (double& x : v) x = std::ldexp(mantissa(rng), exponent(rng));
  return v;
}

std::vector<float> FloatsOf(uint32_t r, size_t n) {
  std::mt19937_64 rng(5678 + r);
  std::uniform_real_distribution<float> value(-100.0f, 100.0f);
  std::vector<float> v(n);
  for (float& x : v) x = value(rng);
  return v;
}

TEST(MpiCollectivesTest, AllGatherOfStringsOfDifferentLengths) {
  Cluster& cluster = TestCluster();
  absl::StatusOr<std::vector<std::string>> all = cluster.AllGather(StringOf(cluster.rank()));
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_EQ(all->size(), cluster.world_size());
  for (uint32_t r = 0; r < cluster.world_size(); ++r) {
    EXPECT_EQ((*all)[r], StringOf(r)) << "rank " << r << "'s string";
  }
  absl::StatusOr<std::vector<std::string>> empty = cluster.AllGather("");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, std::vector<std::string>(cluster.world_size()));
}

TEST(MpiCollectivesTest, SumDoublesAddsInRankOrderBitForBit) {
  Cluster& cluster = TestCluster();
  const uint32_t n = cluster.world_size();
  // More than one gather step: at most kGatherDoubles / n values a step,
  // fewer under the test cluster's call limit (kTestClusterCallBytes).
  const size_t count = kGatherDoubles / n + 3;
  std::vector<double> values = DoublesOf(cluster.rank(), count);
  ASSERT_TRUE(cluster.SumDoubles(values).ok());
  std::vector<std::vector<double>> inputs;
  for (uint32_t r = 0; r < n; ++r) inputs.push_back(DoublesOf(r, count));
  size_t mismatches = 0;
  for (size_t i = 0; i < count; ++i) {
    double expected = inputs[0][i];
    for (uint32_t r = 1; r < n; ++r) expected += inputs[r][i];
    if (std::memcmp(&expected, &values[i], sizeof(double)) != 0) ++mismatches;
  }
  EXPECT_EQ(mismatches, 0u) << "of " << count << " sums";
}

TEST(MpiCollectivesTest, SumFloatsWithinRounding) {
  Cluster& cluster = TestCluster();
  const uint32_t n = cluster.world_size();
  const size_t count = 10007;
  std::vector<float> values = FloatsOf(cluster.rank(), count);
  ASSERT_TRUE(cluster.SumFloats(values).ok());
  std::vector<std::vector<float>> inputs;
  for (uint32_t r = 0; r < n; ++r) inputs.push_back(FloatsOf(r, count));
  for (size_t i = 0; i < count; ++i) {
    double exact = 0, magnitude = 0;
    for (uint32_t r = 0; r < n; ++r) {
      exact += inputs[r][i];
      magnitude += std::fabs(inputs[r][i]);
    }
    // n - 1 float additions, each off by at most half an ulp of the sum so
    // far (<= magnitude).
    ASSERT_NEAR(values[i], exact, n * magnitude * 0x1p-24) << "element " << i;
  }
}

TEST(MpiCollectivesTest, SumsOfDifferentLengthsAreRefusedOnEveryRank) {
  Cluster& cluster = TestCluster();
  std::vector<double> doubles(cluster.rank() == 0 ? 3 : 4, 1.0);
  EXPECT_EQ(cluster.SumDoubles(doubles).code(), absl::StatusCode::kInvalidArgument);
  std::vector<float> floats(cluster.rank() == 0 ? 5 : 2, 1.0f);
  EXPECT_EQ(cluster.SumFloats(floats).code(), absl::StatusCode::kInvalidArgument);
  std::vector<float> none;
  EXPECT_TRUE(cluster.SumFloats(none).ok());
  EXPECT_TRUE(cluster.Barrier().ok());
}

TEST(MpiCollectivesTest, GatherPiecesShareACallAmongTheRanksWithBytesLeft) {
  EXPECT_EQ(GatherPieces(std::vector<uint64_t>{0, 0, 0}, 10), (std::vector<uint64_t>{0, 0, 0}));
  EXPECT_EQ(GatherPieces(std::vector<uint64_t>{2, 50, 0, 50}, 10),
            (std::vector<uint64_t>{2, 4, 0, 4}));
  EXPECT_EQ(GatherPieces(std::vector<uint64_t>{5, 5, 5}, 1000), (std::vector<uint64_t>{5, 5, 5}));
  // Less room than ranks with bytes left: still progress, within the room.
  EXPECT_EQ(GatherPieces(std::vector<uint64_t>{9, 9, 9}, 2), (std::vector<uint64_t>{0, 1, 1}));
  EXPECT_EQ(GatherPieces(std::vector<uint64_t>{9, 9, 9}, 1), (std::vector<uint64_t>{0, 0, 1}));
  // One rank with a large payload takes the room the others leave.
  EXPECT_EQ(GatherPieces(std::vector<uint64_t>{0, 1000, 3}, 100),
            (std::vector<uint64_t>{0, 97, 3}));
}

// A communicator of every rank for calling the collectives directly with a
// limit of their own (the test cluster's communicators are its own).
class WorldCopy {
 public:
  WorldCopy() { MPI_Comm_dup(MPI_COMM_WORLD, &comm_); }
  ~WorldCopy() { MPI_Comm_free(&comm_); }
  MPI_Comm get() const { return comm_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// Payloads many times an injected call limit arrive whole and exact: each
// rank's string (one of them 100 kB, one empty), under limits from one
// byte a call up.
TEST(MpiCollectivesTest, AllGatherLargerThanTheCallLimitTakesSeveralCalls) {
  Cluster& cluster = TestCluster();
  WorldCopy world;
  for (uint64_t limit : {1, 7, 100, 4096}) {
    SCOPED_TRACE(absl::StrCat("max_call_bytes ", limit));
    // Rank 1's 100 kB only where a call moves more than a few bytes (a
    // call per byte would take 100 000 calls).
    auto payload = [&](uint32_t r) {
      return r == 1 && limit >= 100 ? std::string(100 * 1000, 'x') + StringOf(r) : StringOf(r);
    };
    CallRecorder recorder;
    absl::StatusOr<std::vector<std::string>> all =
        MpiAllGather(world.get(), payload(cluster.rank()), limit);
    ASSERT_TRUE(all.ok()) << all.status();
    // The lengths' gather moves 8 bytes a rank; every other call is within
    // the limit.
    EXPECT_LE(recorder.largest(), std::max<uint64_t>(limit, 8 * cluster.world_size()));
    EXPECT_GT(recorder.calls(), 2u);
    ASSERT_EQ(all->size(), cluster.world_size());
    for (uint32_t r = 0; r < cluster.world_size(); ++r) {
      EXPECT_TRUE((*all)[r] == payload(r))
          << "rank " << r << "'s string of " << payload(r).size() << " bytes";
    }
  }
  absl::StatusOr<std::vector<std::string>> none = MpiAllGather(world.get(), "", 1);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(*none, std::vector<std::string>(cluster.world_size()));
}

// Sums of many more values than one call may move are exact: doubles added
// in rank order bit for bit, and integer-valued floats (exact in any
// order) equal to their sum.
TEST(MpiCollectivesTest, SumsLargerThanTheCallLimitAreExact) {
  Cluster& cluster = TestCluster();
  WorldCopy world;
  const uint32_t n = cluster.world_size();
  const size_t count = 1001;
  for (uint64_t limit : {n * sizeof(double), 3 * n * sizeof(double) + 5}) {
    SCOPED_TRACE(absl::StrCat("max_call_bytes ", limit));
    std::vector<double> values = DoublesOf(cluster.rank(), count);
    CallRecorder recorder;
    ASSERT_TRUE(MpiSumDoubles(world.get(), values, limit).ok());
    EXPECT_LE(recorder.largest(), limit);
    EXPECT_GT(recorder.calls(), 2u);
    std::vector<std::vector<double>> inputs;
    for (uint32_t r = 0; r < n; ++r) inputs.push_back(DoublesOf(r, count));
    size_t mismatches = 0;
    for (size_t i = 0; i < count; ++i) {
      double expected = inputs[0][i];
      for (uint32_t r = 1; r < n; ++r) expected += inputs[r][i];
      if (std::memcmp(&expected, &values[i], sizeof(double)) != 0) ++mismatches;
    }
    EXPECT_EQ(mismatches, 0u) << "of " << count << " sums";
  }
  auto integers = [&](uint32_t r) {
    std::vector<float> v(count);
    for (size_t i = 0; i < count; ++i) v[i] = static_cast<float>((i * 7 + r * 131) % 2001) - 1000;
    return v;
  };
  for (uint64_t limit : {sizeof(float), 4 * sizeof(float) + 3, size_t{1000}}) {
    SCOPED_TRACE(absl::StrCat("max_call_bytes ", limit));
    std::vector<float> values = integers(cluster.rank());
    CallRecorder recorder;
    ASSERT_TRUE(MpiSumFloats(world.get(), values, limit).ok());
    // The lengths' check moves 8 bytes a rank.
    EXPECT_LE(recorder.largest(), std::max<uint64_t>(limit, 8 * n));
    EXPECT_GT(recorder.calls(), 2u);
    std::vector<std::vector<float>> inputs;
    for (uint32_t r = 0; r < n; ++r) inputs.push_back(integers(r));
    for (size_t i = 0; i < count; ++i) {
      float expected = 0;
      for (uint32_t r = 0; r < n; ++r) expected += inputs[r][i];
      ASSERT_EQ(values[i], expected) << "element " << i;
    }
  }
}

// A limit no call can keep is refused on every rank, before any call.
TEST(MpiCollectivesTest, ACallLimitTooSmallIsRefusedOnEveryRank) {
  Cluster& cluster = TestCluster();
  WorldCopy world;
  EXPECT_EQ(MpiAllGather(world.get(), "abc", 0).status().code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<double> doubles(10, 1.0);
  EXPECT_EQ(MpiSumDoubles(world.get(), doubles, cluster.world_size() * sizeof(double) - 1).code(),
            absl::StatusCode::kInvalidArgument);
  std::vector<float> floats(10, 1.0f);
  EXPECT_EQ(MpiSumFloats(world.get(), floats, 3).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(MpiBarrier(world.get()).ok());
}

}  // namespace
}  // namespace ember
