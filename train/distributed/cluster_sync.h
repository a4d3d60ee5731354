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
//
// Featurized models: each rank's trainers update its own copy of the
// feature table during a round; at the round end each rank sends only the
// rows that changed since the last sync (their change to the parameters and
// the Adagrad state), every rank adds every rank's changes in rank order to
// the table as of the last sync, and every rank takes the result. A copy of
// the table as of the last sync is kept for this (the table's size again).
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

// `cluster` must outlive the result. `features`: the feature table every
// rank starts from (featurized models), or null.
std::unique_ptr<ClusterSync> MakeClusterSync(Cluster* cluster, bool deterministic,
                                             uint32_t keys_per_round,
                                             const FeatureTable* features = nullptr);

}  // namespace ember

#endif  // EMBER_TRAIN_DISTRIBUTED_CLUSTER_SYNC_H_
