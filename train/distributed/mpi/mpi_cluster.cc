#include "train/distributed/mpi/mpi_cluster.h"

#include <mpi.h>
#include <unistd.h>

#include <climits>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "absl/strings/str_cat.h"
#include "train/distributed/mpi/internal/mpi_collectives.h"
#include "train/distributed/mpi/internal/mpi_status.h"
#include "train/distributed/mpi/internal/mpi_transport.h"

namespace ember {
namespace {

std::string HostAndPid() {
  char host[HOST_NAME_MAX + 1] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) host[0] = '\0';
  return absl::StrCat(host[0] ? host : "unknown host", " pid ", getpid());
}

class MpiCluster final : public Cluster {
 public:
  MpiCluster(std::unique_ptr<MpiTransport> transport, MPI_Comm collectives, uint64_t max_call_bytes)
      : transport_(std::move(transport)),
        collectives_(collectives),
        max_call_bytes_(max_call_bytes),
        where_(HostAndPid()) {}
  ~MpiCluster() override {
    transport_.reset();
    MPI_Comm_free(&collectives_);
    MPI_Finalize();
  }
  MpiCluster(const MpiCluster&) = delete;
  MpiCluster& operator=(const MpiCluster&) = delete;

  uint32_t rank() const override { return transport_->rank(); }
  uint32_t world_size() const override { return transport_->world_size(); }
  std::string where() const override { return where_; }
  PartitionTransport* transport() override { return transport_.get(); }
  absl::StatusOr<std::vector<std::string>> AllGather(const std::string& mine) override {
    return MpiAllGather(collectives_, mine, max_call_bytes_);
  }
  absl::Status SumDoubles(std::span<double> values) override {
    return MpiSumDoubles(collectives_, values, max_call_bytes_);
  }
  absl::Status SumFloats(std::span<float> values) override {
    return MpiSumFloats(collectives_, values, max_call_bytes_);
  }
  absl::Status Barrier() override { return MpiBarrier(collectives_); }
  void Abort(const absl::Status& status) override {
    std::fprintf(stderr, "ember: rank %u (%s): %s\n", rank(), where_.c_str(),
                 std::string(status.message()).c_str());
    std::fflush(stderr);
    AbortMpiJob(1);
  }

 private:
  std::unique_ptr<MpiTransport> transport_;
  MPI_Comm collectives_;
  const uint64_t max_call_bytes_;
  const std::string where_;
};

// The process's MPI, started with MPI_THREAD_MULTIPLE and errors returned.
absl::Status StartMpi() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized || finalized) {
    return absl::FailedPreconditionError(
        "mpi: MPI was already started in this process (it starts once per process)");
  }
  int provided = MPI_THREAD_SINGLE;
  if (absl::Status s = MpiStatus(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided),
                                 "MPI_Init_thread");
      !s.ok()) {
    return s;
  }
  if (provided < MPI_THREAD_MULTIPLE) {
    MPI_Finalize();
    return absl::FailedPreconditionError(absl::StrCat(
        "mpi: this MPI offers thread level ", provided, ", not MPI_THREAD_MULTIPLE (",
        MPI_THREAD_MULTIPLE,
        "), which ember needs (its communication thread runs beside the collectives)"));
  }
  return MpiStatus(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                   "setting MPI_COMM_WORLD's error handler");
}

}  // namespace

absl::Status MpiCollectiveOptions::Validate() const {
  if (max_call_bytes < sizeof(double) || max_call_bytes > kMaxMessageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("mpi: max_call_bytes ", max_call_bytes,
                                                   " is outside [", sizeof(double), ", ",
                                                   kMaxMessageBytes, "]"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Cluster>> StartMpiCluster(TransportOptions options,
                                                         MpiCollectiveOptions collectives_options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = collectives_options.Validate(); !s.ok()) return s;
  if (absl::Status s = StartMpi(); !s.ok()) return s;
  MPI_Comm collectives = MPI_COMM_NULL;
  int world = 0;
  absl::Status s = MpiStatus(MPI_Comm_size(MPI_COMM_WORLD, &world), "MPI_Comm_size");
  if (s.ok() && collectives_options.max_call_bytes < world * sizeof(double)) {
    s = absl::InvalidArgumentError(
        absl::StrCat("mpi: max_call_bytes ", collectives_options.max_call_bytes,
                     " cannot hold a double from each of ", world, " ranks"));
  }
  if (s.ok()) s = DupCommunicator(MPI_COMM_WORLD, &collectives, "the collectives");
  absl::StatusOr<std::unique_ptr<MpiTransport>> transport;
  if (s.ok()) {
    transport = MpiTransport::Start(MPI_COMM_WORLD, options);
    s = transport.status();
  }
  if (!s.ok()) {
    if (collectives != MPI_COMM_NULL) MPI_Comm_free(&collectives);
    MPI_Finalize();
    return s;
  }
  return std::unique_ptr<Cluster>(
      new MpiCluster(*std::move(transport), collectives, collectives_options.max_call_bytes));
}

void AbortMpiJob(int exit_code) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, exit_code);
  std::_Exit(exit_code);  // MPI_Abort does not return; without MPI, this ends the process
}

}  // namespace ember
