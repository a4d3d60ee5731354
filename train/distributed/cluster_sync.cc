#include "train/distributed/cluster_sync.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

// One trainer's change, as it travels: its key, then params.size() changes
// of the parameters and as many of the Adagrad state.
void AppendChange(int32_t key, const RelationParams& mine, const RelationParams& base,
                  std::string* out) {
  const size_t n = base.params.size();
  const size_t at = out->size();
  out->resize(at + sizeof(key) + 2 * n * sizeof(float));
  char* p = out->data() + at;
  std::memcpy(p, &key, sizeof(key));
  float* d = reinterpret_cast<float*>(p + sizeof(key));
  for (size_t i = 0; i < n; ++i) d[i] = mine.params[i] - base.params[i];
  for (size_t i = 0; i < n; ++i) d[n + i] = mine.state[i] - base.state[i];
}

class ClusterSyncImpl final : public ClusterSync {
 public:
  ClusterSyncImpl(Cluster* cluster, bool deterministic, uint32_t keys_per_round,
                  const FeatureTable* features)
      : cluster_(cluster), deterministic_(deterministic), keys_per_round_(keys_per_round) {
    if (features != nullptr) synced_ = *features;
  }

  bool SyncsEveryRound() const override { return true; }

  void SetRoundKeys(std::vector<int32_t> key_of_trainer) override {
    keys_ = std::move(key_of_trainer);
  }

  absl::Status SyncRelations(std::span<Trainer* const> trainers,
                             RelationParams* global) override {
    if (global->params.empty()) return absl::OkStatus();
    RelationParams merged = *global;
    if (deterministic_) {
      RETURN_IF_ERROR(AddInKeyOrder(trainers, *global, &merged));
    } else {
      RETURN_IF_ERROR(AddRankSums(trainers, *global, &merged));
    }
    *global = std::move(merged);
    for (Trainer* t : trainers) t->relations() = *global;
    return absl::OkStatus();
  }

  absl::Status SyncFeatures(std::span<Trainer* const> trainers, FeatureTable* table) override {
    if (table == nullptr) return absl::OkStatus();
    if (table->rows != synced_.rows || table->dim != synced_.dim) {
      return absl::InternalError(absl::StrCat("cluster sync: a feature table of ", table->rows,
                                              " x ", table->dim, " against ", synced_.rows,
                                              " x ", synced_.dim, " at the last sync"));
    }
    for (Trainer* t : trainers) RETURN_IF_ERROR(t->MergeFeatures(table));
    ASSIGN_OR_RETURN(const std::vector<std::string> all,
                     cluster_->AllGather(ChangedFeatureRows(*table)));
    RETURN_IF_ERROR(AddFeatureChanges(all, table));
    for (Trainer* t : trainers) RETURN_IF_ERROR(t->RefreshFeatures(*table));
    return absl::OkStatus();
  }

 private:
  absl::Status AddInKeyOrder(std::span<Trainer* const> trainers, const RelationParams& base,
                             RelationParams* merged) {
    if (keys_.size() != trainers.size()) {
      return absl::InternalError(absl::StrCat("cluster sync: ", keys_.size(), " keys for ",
                                              trainers.size(), " trainers"));
    }
    const size_t n = base.params.size();
    std::string mine;
    for (size_t t = 0; t < trainers.size(); ++t) {
      if (keys_[t] >= 0) AppendChange(keys_[t], trainers[t]->relations(), base, &mine);
    }
    ASSIGN_OR_RETURN(const std::vector<std::string> all, cluster_->AllGather(mine));
    const size_t record = sizeof(int32_t) + 2 * n * sizeof(float);
    std::vector<const float*> by_key(keys_per_round_, nullptr);
    for (uint32_t r = 0; r < all.size(); ++r) {
      if (all[r].size() % record != 0) {
        return absl::DataLossError(absl::StrCat("cluster sync: rank ", r, " sent ",
                                                all[r].size(), " bytes, not whole changes of ",
                                                record));
      }
      for (size_t at = 0; at < all[r].size(); at += record) {
        int32_t key;
        std::memcpy(&key, all[r].data() + at, sizeof(key));
        if (key < 0 || static_cast<uint32_t>(key) >= keys_per_round_ || by_key[key] != nullptr) {
          return absl::DataLossError(
              absl::StrCat("cluster sync: rank ", r, " sent a change under key ", key));
        }
        by_key[key] = reinterpret_cast<const float*>(all[r].data() + at + sizeof(key));
      }
    }
    // A trainer without a bucket adds its unchanged copy's change, +0.
    for (const float* d : by_key) {
      for (size_t i = 0; i < n; ++i) merged->params[i] += d ? d[i] : 0.0f;
      for (size_t i = 0; i < n; ++i) merged->state[i] += d ? d[n + i] : 0.0f;
    }
    return absl::OkStatus();
  }

  absl::Status AddRankSums(std::span<Trainer* const> trainers, const RelationParams& base,
                           RelationParams* merged) {
    const size_t n = base.params.size();
    std::vector<float> sum(2 * n, 0.0f);
    for (Trainer* t : trainers) {
      const RelationParams& r = t->relations();
      for (size_t i = 0; i < n; ++i) sum[i] += r.params[i] - base.params[i];
      for (size_t i = 0; i < n; ++i) sum[n + i] += r.state[i] - base.state[i];
    }
    RETURN_IF_ERROR(cluster_->SumFloats(sum));
    for (size_t i = 0; i < n; ++i) merged->params[i] += sum[i];
    for (size_t i = 0; i < n; ++i) merged->state[i] += sum[n + i];
    return absl::OkStatus();
  }

  // The rows of `table` that differ from synced_, as [u32 row][dim floats
  // of change][1 float of Adagrad change] records.
  std::string ChangedFeatureRows(const FeatureTable& table) const {
    const size_t dim = static_cast<size_t>(table.dim);
    std::string out;
    std::vector<float> record(dim + 1);
    for (uint32_t f = 0; f < table.rows; ++f) {
      const float* now = table.embeddings.data() + f * dim;
      const float* was = synced_.embeddings.data() + f * dim;
      if (std::memcmp(now, was, dim * sizeof(float)) == 0 &&
          table.optimizer[f] == synced_.optimizer[f]) {
        continue;
      }
      for (size_t i = 0; i < dim; ++i) record[i] = now[i] - was[i];
      record[dim] = table.optimizer[f] - synced_.optimizer[f];
      out.append(reinterpret_cast<const char*>(&f), sizeof(f));
      out.append(reinterpret_cast<const char*>(record.data()), record.size() * sizeof(float));
    }
    return out;
  }

  // Adds every rank's changed rows, in rank order, to synced_, and copies
  // the rows any rank changed into `table`.
  absl::Status AddFeatureChanges(const std::vector<std::string>& all, FeatureTable* table) {
    const size_t dim = static_cast<size_t>(table->dim);
    const size_t record = sizeof(uint32_t) + (dim + 1) * sizeof(float);
    std::vector<uint32_t> changed;
    std::vector<float> d(dim + 1);  // one record's changes, aligned
    for (uint32_t r = 0; r < all.size(); ++r) {
      if (all[r].size() % record != 0) {
        return absl::DataLossError(absl::StrCat("cluster sync: rank ", r, " sent ",
                                                all[r].size(), " bytes of feature rows, not "
                                                "whole rows of ", record));
      }
      for (size_t at = 0; at < all[r].size(); at += record) {
        uint32_t f;
        std::memcpy(&f, all[r].data() + at, sizeof(f));
        if (f >= table->rows) {
          return absl::DataLossError(
              absl::StrCat("cluster sync: rank ", r, " sent feature row ", f));
        }
        std::memcpy(d.data(), all[r].data() + at + sizeof(f), d.size() * sizeof(float));
        float* row = synced_.embeddings.data() + f * dim;
        for (size_t i = 0; i < dim; ++i) row[i] += d[i];
        synced_.optimizer[f] += d[dim];
        changed.push_back(f);
      }
    }
    for (uint32_t f : changed) {
      std::memcpy(table->embeddings.data() + f * dim, synced_.embeddings.data() + f * dim,
                  dim * sizeof(float));
      table->optimizer[f] = synced_.optimizer[f];
    }
    return absl::OkStatus();
  }

  Cluster* const cluster_;
  const bool deterministic_;
  const uint32_t keys_per_round_;
  std::vector<int32_t> keys_;
  FeatureTable synced_;  // the table as of the last sync (featurized models)
};

}  // namespace

std::unique_ptr<ClusterSync> MakeClusterSync(Cluster* cluster, bool deterministic,
                                             uint32_t keys_per_round,
                                             const FeatureTable* features) {
  return std::make_unique<ClusterSyncImpl>(cluster, deterministic, keys_per_round, features);
}

}  // namespace ember
