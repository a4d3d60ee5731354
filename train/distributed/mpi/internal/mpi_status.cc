#include "train/distributed/mpi/internal/mpi_status.h"

#include "absl/strings/str_cat.h"

namespace ember {

absl::Status MpiStatus(int code, absl::string_view what) {
  if (code == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  return absl::InternalError(
      absl::StrCat("mpi: ", what, ": ",
                   length > 0 ? absl::string_view(text, length) : absl::string_view("error"),
                   " (code ", code, ")"));
}

absl::Status DupCommunicator(MPI_Comm parent, MPI_Comm* out, absl::string_view purpose) {
  if (absl::Status s = MpiStatus(MPI_Comm_dup(parent, out),
                                 absl::StrCat("duplicating the communicator for ", purpose));
      !s.ok()) {
    return s;
  }
  return MpiStatus(MPI_Comm_set_errhandler(*out, MPI_ERRORS_RETURN),
                   absl::StrCat("setting the error handler of the ", purpose, " communicator"));
}

}  // namespace ember
