#include "train/distributed/mpi/internal/mpi_collectives.h"

#include <algorithm>
#include <climits>
#include <cstdint>

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

absl::StatusOr<std::vector<std::string>> MpiAllGather(MPI_Comm comm, const std::string& mine) {
  absl::StatusOr<std::vector<uint64_t>> sizes = GatherCounts(comm, mine.size(), "AllGather");
  if (!sizes.ok()) return sizes.status();
  uint64_t total = 0;
  for (uint64_t n : *sizes) total += n;
  if (total > INT_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("AllGather: ", total, " bytes from all ranks exceed 2^31 - 1"));
  }
  std::vector<int> counts, offsets;
  int offset = 0;
  for (uint64_t n : *sizes) {
    counts.push_back(static_cast<int>(n));
    offsets.push_back(offset);
    offset += static_cast<int>(n);
  }
  std::string all(total, '\0');
  if (absl::Status s =
          MpiStatus(MPI_Allgatherv(mine.data(), static_cast<int>(mine.size()), MPI_BYTE, all.data(),
                                   counts.data(), offsets.data(), MPI_BYTE, comm),
                    "AllGather: MPI_Allgatherv");
      !s.ok()) {
    return s;
  }
  std::vector<std::string> out;
  for (size_t r = 0; r < counts.size(); ++r) out.push_back(all.substr(offsets[r], counts[r]));
  return out;
}

absl::Status MpiSumDoubles(MPI_Comm comm, std::span<double> values) {
  if (absl::Status s = CheckSameCount(comm, values.size(), "SumDoubles"); !s.ok()) return s;
  int ranks = 0;
  if (absl::Status s = MpiStatus(MPI_Comm_size(comm, &ranks), "MPI_Comm_size"); !s.ok()) return s;
  const size_t step = std::max<size_t>(1, kGatherDoubles / ranks);
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

absl::Status MpiSumFloats(MPI_Comm comm, std::span<float> values) {
  if (absl::Status s = CheckSameCount(comm, values.size(), "SumFloats"); !s.ok()) return s;
  for (size_t begin = 0; begin < values.size(); begin += INT_MAX) {
    const size_t n = std::min<size_t>(INT_MAX, values.size() - begin);
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
