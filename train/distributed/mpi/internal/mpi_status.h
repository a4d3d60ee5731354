// MPI return codes as absl::Status. The module's communicators use
// MPI_ERRORS_RETURN, so a failed call returns its code here instead of
// aborting the job.
#ifndef EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_STATUS_H_
#define EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_STATUS_H_

#include <mpi.h>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace ember {

// OK for MPI_SUCCESS; otherwise Internal "mpi: <what>: <MPI's error text>".
absl::Status MpiStatus(int code, absl::string_view what);

// Duplicates `parent` (collective over it) into `*out`, with errors
// returned rather than fatal.
absl::Status DupCommunicator(MPI_Comm parent, MPI_Comm* out, absl::string_view purpose);

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_MPI_INTERNAL_MPI_STATUS_H_
