// The parameter-sync seam: how trainers agree on the parameters they all
// train, the relation parameters and (featurized models) the feature table.
//
// Each trainer updates its own copy of the relation parameters; the loop
// calls SyncRelations between stretches of training (with no batch in
// flight). Today's implementation merges in process: the sum of every
// trainer's change since the last sync, which to first order is what one
// trainer applying all the updates would have done. NCCL all-reduce across
// GPUs and MPI across processes are further implementations.
#ifndef EMBER_TRAIN_SCHEDULE_PARAMETER_SYNC_H_
#define EMBER_TRAIN_SCHEDULE_PARAMETER_SYNC_H_

#include <memory>
#include <span>

#include "absl/status/status.h"
#include "train/device/device_communicator.h"
#include "train/model/checkpoint.h"
#include "train/model/feature_table.h"
#include "train/trainers/trainer.h"

namespace ember {

class ParameterSync {
 public:
  virtual ~ParameterSync() = default;
  // Whether trainers must meet at every round end (true), or may train on
  // across rounds until the loop's next sync (false).
  virtual bool SyncsEveryRound() const = 0;
  // Folds every trainer's relation changes since the last sync into
  // *global, and gives every trainer the result.
  virtual absl::Status SyncRelations(std::span<Trainer* const> trainers,
                                     RelationParams* global) = 0;
  // Brings the trainers' views of the feature table into agreement with
  // *table (featurized models; null otherwise).
  virtual absl::Status SyncFeatures(std::span<Trainer* const> trainers, FeatureTable* table) = 0;
};

// In-process sync for trainers sharing host memory: relations merged as
// above (trainers meet every round when there are several); the feature
// table is one host object that CPU trainers update in place (Hogwild),
// into which trainers with their own copy (device trainers) merge their
// changes the same way, then take the result.
std::unique_ptr<ParameterSync> MakeInProcessSync(size_t trainers);

// The same merges as sums over a communicator's ranks, one rank per
// trainer (NCCL among one process's GPUs, train/cuda/nccl_communicator.h;
// MakeHostCommunicator in tests): each rank's change since the last sync
// (relation parameters and their Adagrad state; the feature-table changes
// its trainer made to its own copy) is all-reduced, the sum added to the
// global values, and every trainer given the result. Trainers meet every
// round. A lone rank passes its values through as MakeInProcessSync does.
// REQUIRES: SyncRelations and SyncFeatures get comm->ranks() trainers.
std::unique_ptr<ParameterSync> MakeNcclSync(std::unique_ptr<DeviceCommunicator> comm);

}  // namespace ember

#endif  // EMBER_TRAIN_SCHEDULE_PARAMETER_SYNC_H_
