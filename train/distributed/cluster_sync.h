// ParameterSync across ranks: at every round end, each rank's trainers'
// relation changes since the last sync are summed over every trainer of
// every rank (the in-process merge's arithmetic, parameter_sync.h), and
// every trainer of every rank takes the result.
//
// Deterministic mode adds the changes in the order of the round's buckets
// (each trainer's change under the key SetRoundKeys gave it, a +0 for every
// key no trainer had), which is the order in which one process with the
// same total trainers adds them when each bucket trains on the trainer of
// its position (RoundSourceOptions::trainer_per_bucket): so a run across
// ranks equals that run bit for bit. Otherwise each rank first merges its
// own trainers and the ranks' sums are added by Cluster::SumFloats.
#ifndef EMBER_TRAIN_DISTRIBUTED_CLUSTER_SYNC_H_
#define EMBER_TRAIN_DISTRIBUTED_CLUSTER_SYNC_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "train/distributed/cluster.h"
#include "train/schedule/parameter_sync.h"

namespace ember {

class ClusterSync : public ParameterSync {
 public:
  // The key of each local trainer's change in the next SyncRelations: the
  // position of its bucket in the global round, or -1 for a trainer that
  // trained nothing. Keys are < `keys_per_round`; deterministic mode only.
  virtual void SetRoundKeys(std::vector<int32_t> key_of_trainer) = 0;
};

// `cluster` must outlive the result. Featurized models are refused by
// SyncFeatures (a feature table is not yet summed across ranks).
std::unique_ptr<ClusterSync> MakeClusterSync(Cluster* cluster, bool deterministic,
                                             uint32_t keys_per_round);

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_CLUSTER_SYNC_H_
