// What an MPI launcher (mpirun, mpiexec, srun) announced to this process in
// its environment, read without starting MPI: a build without MPI uses it
// to refuse a run under `mpirun -np 2` instead of training N copies alone.
//
// Read, first one set and well formed wins:
//   world size: OMPI_COMM_WORLD_SIZE (Open MPI), PMI_SIZE (MPICH, Intel MPI,
//               srun --mpi=pmi2)
//   rank:       OMPI_COMM_WORLD_RANK (Open MPI), PMI_RANK (as above),
//               PMIX_RANK (PMIx launchers; Open MPI 4.1 sets no PMIX_SIZE)
// A value that is not a plain decimal number (or a size of 0) counts as
// unset. Thread-compatible: reads the environment, like getenv.
#ifndef EMBER_TRAIN_DISTRIBUTED_LAUNCHER_H_
#define EMBER_TRAIN_DISTRIBUTED_LAUNCHER_H_

#include <cstdint>

namespace ember {

// The world size the launcher announced; 1 when none did.
uint32_t LauncherWorldSize();
// This process's rank as the launcher announced it; 0 when none did.
uint32_t LauncherRank();

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_LAUNCHER_H_
