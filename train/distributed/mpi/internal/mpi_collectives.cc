#include "train/distributed/mpi/internal/mpi_collectives.h"

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "train/distributed/mpi/internal/mpi_status.h"

namespace ember {
namespace {

// Every rank's `count`, indexed by rank.
absl::StatusOr<std::vector<uint64_t>> GatherCounts(MPI_Comm comm, uint64_t count,
                                                   absl::string_view call) {
  int ranks = 0;
  if (absl::Status s = MpiStatus(MPI_Comm_size(comm, &ranks), "MPI_Comm_size"); !s.ok()) {
    return s;
  }
  std::vector<uint64_t> counts(ranks);
  if (absl::Status s =
          MpiStatus(MPI_Allgather(&count, 1, MPI_UINT64_T, counts.data(), 1, MPI_UINT64_T, comm),
                    absl::StrCat(call, ": gathering the lengths"));
      !s.ok()) {
    return s;
  }
  return counts;
}

// OK when every rank passes `count` elements; InvalidArgument listing the
// counts on every rank otherwise (all ranks see the same list).
absl::Status CheckSameCount(MPI_Comm comm, uint64_t count, absl::string_view call) {
  absl::StatusOr<std::vector<uint64_t>> counts = GatherCounts(comm, count, call);
  if (!counts.ok()) return counts.status();
  if (std::any_of(counts->begin(), counts->end(), [&](uint64_t c) { return c != count; })) {
    return absl::InvalidArgumentError(absl::StrCat(
        call, ": the ranks pass different lengths (by rank: ", absl::StrJoin(*counts, ", "), ")"));
  }
  return absl::OkStatus();
}

}  // namespace

std::vector<uint64_t> GatherPieces(std::span<const uint64_t> left, uint64_t budget) {
  std::vector<uint32_t> order;
  for (uint32_t r = 0; r < left.size(); ++r) {
    if (left[r] > 0) order.push_back(r);
  }
  std::stable_sort(order.begin(), order.end(),
                   [&](uint32_t a, uint32_t b) { return left[a] < left[b]; });
  std::vector<uint64_t> piece(left.size(), 0);
  uint64_t room = budget;
  for (size_t i = 0; i < order.size(); ++i) {
    const uint32_t r = order[i];
    piece[r] = std::min(left[r], room / (order.size() - i));
    room -= piece[r];
  }
  return piece;
}

absl::StatusOr<std::vector<std::string>> MpiAllGather(MPI_Comm comm, const std::string& mine,
                                                      uint64_t max_call_bytes) {
  if (max_call_bytes < 1 || max_call_bytes > kMpiMaxCallBytes) {
    return absl::InvalidArgumentError(absl::StrCat("AllGather: max_call_bytes ", max_call_bytes,
                                                   " is outside [1, ", kMpiMaxCallBytes, "]"));
  }
  absl::StatusOr<std::vector<uint64_t>> sizes = GatherCounts(comm, mine.size(), "AllGather");
  if (!sizes.ok()) return sizes.status();
  int me = 0;
  if (absl::Status s = MpiStatus(MPI_Comm_rank(comm, &me), "MPI_Comm_rank"); !s.ok()) return s;
  const size_t ranks = sizes->size();
  std::vector<std::string> out(ranks);
  for (size_t r = 0; r < ranks; ++r) out[r].resize((*sizes)[r]);
  std::vector<uint64_t> left = *sizes;
  std::vector<uint64_t> done(ranks, 0);
  std::vector<int> counts(ranks), offsets(ranks);
  std::string buffer;
  for (;;) {
    const std::vector<uint64_t> piece = GatherPieces(left, max_call_bytes);
    uint64_t total = 0;
    for (size_t r = 0; r < ranks; ++r) {
      counts[r] = static_cast<int>(piece[r]);
      offsets[r] = static_cast<int>(total);
      total += piece[r];
    }
    if (total == 0) break;  // every rank's bytes are in
    buffer.resize(total);
    if (absl::Status s =
            MpiStatus(MPI_Allgatherv(mine.data() + done[me], counts[me], MPI_BYTE, buffer.data(),
                                     counts.data(), offsets.data(), MPI_BYTE, comm),
                      "AllGather: MPI_Allgatherv");
        !s.ok()) {
      return s;
    }
    for (size_t r = 0; r < ranks; ++r) {
      std::memcpy(out[r].data() + done[r], buffer.data() + offsets[r], piece[r]);
      done[r] += piece[r];
      left[r] -= piece[r];
    }
  }
  return out;
}

absl::Status MpiSumDoubles(MPI_Comm comm, std::span<double> values, uint64_t max_call_bytes) {
  int ranks = 0;
  if (absl::Status s = MpiStatus(MPI_Comm_size(comm, &ranks), "MPI_Comm_size"); !s.ok()) return s;
  if (max_call_bytes < ranks * sizeof(double) || max_call_bytes > kMpiMaxCallBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "SumDoubles: max_call_bytes ", max_call_bytes, " is outside [", ranks * sizeof(double),
        " (a double from each of ", ranks, " ranks), ", kMpiMaxCallBytes, "]"));
  }
  if (absl::Status s = CheckSameCount(comm, values.size(), "SumDoubles"); !s.ok()) return s;
  // Each step gathers `step` doubles from every rank.
  const size_t step = std::min<size_t>(kGatherDoubles, max_call_bytes / sizeof(double)) / ranks;
  std::vector<double> gathered;
  for (size_t begin = 0; begin < values.size(); begin += step) {
    const size_t n = std::min(step, values.size() - begin);
    gathered.resize(n * ranks);
    if (absl::Status s =
            MpiStatus(MPI_Allgather(values.data() + begin, static_cast<int>(n), MPI_DOUBLE,
                                    gathered.data(), static_cast<int>(n), MPI_DOUBLE, comm),
                      "SumDoubles: MPI_Allgather");
        !s.ok()) {
      return s;
    }
    for (size_t i = 0; i < n; ++i) {
      double sum = gathered[i];
      for (int r = 1; r < ranks; ++r) sum += gathered[r * n + i];
      values[begin + i] = sum;
    }
  }
  return absl::OkStatus();
}

absl::Status MpiSumFloats(MPI_Comm comm, std::span<float> values, uint64_t max_call_bytes) {
  if (max_call_bytes < sizeof(float) || max_call_bytes > kMpiMaxCallBytes) {
    return absl::InvalidArgumentError(absl::StrCat("SumFloats: max_call_bytes ", max_call_bytes,
                                                   " is outside [", sizeof(float), ", ",
                                                   kMpiMaxCallBytes, "]"));
  }
  if (absl::Status s = CheckSameCount(comm, values.size(), "SumFloats"); !s.ok()) return s;
  const size_t step = max_call_bytes / sizeof(float);
  for (size_t begin = 0; begin < values.size(); begin += step) {
    const size_t n = std::min(step, values.size() - begin);
    if (absl::Status s = MpiStatus(MPI_Allreduce(MPI_IN_PLACE, values.data() + begin,
                                                 static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm),
                                   "SumFloats: MPI_Allreduce");
        !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status MpiBarrier(MPI_Comm comm) { return MpiStatus(MPI_Barrier(comm), "Barrier"); }

}  // namespace ember
