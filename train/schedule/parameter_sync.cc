#include "train/schedule/parameter_sync.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

class InProcessSync final : public ParameterSync {
 public:
  explicit InProcessSync(size_t trainers) : trainers_(trainers) {}

  bool SyncsEveryRound() const override { return trainers_ > 1; }

  absl::Status SyncRelations(std::span<Trainer* const> trainers,
                             RelationParams* global) override {
    if (trainers.size() == 1 || global->params.empty()) {
      *global = trainers[0]->relations();
      return absl::OkStatus();
    }
    RelationParams merged = *global;
    for (Trainer* t : trainers) {
      const RelationParams& r = t->relations();
      for (size_t i = 0; i < merged.params.size(); ++i) {
        merged.params[i] += r.params[i] - global->params[i];
        merged.state[i] += r.state[i] - global->state[i];
      }
    }
    *global = std::move(merged);
    for (Trainer* t : trainers) t->relations() = *global;
    return absl::OkStatus();
  }

  absl::Status SyncFeatures(std::span<Trainer* const> trainers, FeatureTable* table) override {
    if (table == nullptr) return absl::OkStatus();
    for (Trainer* t : trainers) RETURN_IF_ERROR(t->MergeFeatures(table));
    for (Trainer* t : trainers) RETURN_IF_ERROR(t->RefreshFeatures(*table));
    return absl::OkStatus();
  }

 private:
  const size_t trainers_;
};

class NcclSync final : public ParameterSync {
 public:
  explicit NcclSync(std::unique_ptr<DeviceCommunicator> comm) : comm_(std::move(comm)) {}

  bool SyncsEveryRound() const override { return true; }

  absl::Status SyncRelations(std::span<Trainer* const> trainers,
                             RelationParams* global) override {
    RETURN_IF_ERROR(CheckRanks(trainers));
    if (trainers.size() == 1 || global->params.empty()) {
      *global = trainers[0]->relations();
      return absl::OkStatus();
    }
    // Rank r's buffer: its change of the parameters, then of their state.
    const size_t n = global->params.size();
    std::vector<std::vector<float>> change(trainers.size(), std::vector<float>(2 * n));
    for (size_t r = 0; r < trainers.size(); ++r) {
      const RelationParams& mine = trainers[r]->relations();
      for (size_t i = 0; i < n; ++i) {
        change[r][i] = mine.params[i] - global->params[i];
        change[r][n + i] = mine.state[i] - global->state[i];
      }
    }
    RETURN_IF_ERROR(AllReduce(&change));
    for (size_t i = 0; i < n; ++i) {
      global->params[i] += change[0][i];
      global->state[i] += change[0][n + i];
    }
    for (Trainer* t : trainers) t->relations() = *global;
    return absl::OkStatus();
  }

  absl::Status SyncFeatures(std::span<Trainer* const> trainers, FeatureTable* table) override {
    if (table == nullptr) return absl::OkStatus();
    RETURN_IF_ERROR(CheckRanks(trainers));
    if (trainers.size() == 1) {
      RETURN_IF_ERROR(trainers[0]->MergeFeatures(table));
      return trainers[0]->RefreshFeatures(*table);
    }
    // Each trainer's changes to its own copy, merged into a copy of the
    // table, less the table: its change; trainers that update the table in
    // place (CPU) change nothing here.
    const size_t n = table->embeddings.size(), m = table->optimizer.size();
    std::vector<std::vector<float>> change(trainers.size());
    for (size_t r = 0; r < trainers.size(); ++r) {
      FeatureTable merged = *table;
      RETURN_IF_ERROR(trainers[r]->MergeFeatures(&merged));
      change[r].resize(n + m);
      for (size_t i = 0; i < n; ++i) change[r][i] = merged.embeddings[i] - table->embeddings[i];
      for (size_t i = 0; i < m; ++i) change[r][n + i] = merged.optimizer[i] - table->optimizer[i];
    }
    RETURN_IF_ERROR(AllReduce(&change));
    for (size_t i = 0; i < n; ++i) table->embeddings[i] += change[0][i];
    for (size_t i = 0; i < m; ++i) table->optimizer[i] += change[0][n + i];
    for (Trainer* t : trainers) RETURN_IF_ERROR(t->RefreshFeatures(*table));
    return absl::OkStatus();
  }

 private:
  absl::Status CheckRanks(std::span<Trainer* const> trainers) const {
    if (trainers.size() == static_cast<size_t>(comm_->ranks())) return absl::OkStatus();
    return absl::InternalError(absl::StrCat(comm_->name(), ": ", trainers.size(),
                                            " trainers for ", comm_->ranks(), " ranks"));
  }
  absl::Status AllReduce(std::vector<std::vector<float>>* buffers) {
    std::vector<float*> data;
    for (std::vector<float>& b : *buffers) data.push_back(b.data());
    const std::string error = comm_->AllReduceSum(data.data(), buffers->front().size());
    if (error.empty()) return absl::OkStatus();
    return absl::InternalError(absl::StrCat(comm_->name(), ": ", error));
  }

  const std::unique_ptr<DeviceCommunicator> comm_;
};

}  // namespace

std::unique_ptr<ParameterSync> MakeInProcessSync(size_t trainers) {
  return std::make_unique<InProcessSync>(trainers);
}

std::unique_ptr<ParameterSync> MakeNcclSync(std::unique_ptr<DeviceCommunicator> comm) {
  return std::make_unique<NcclSync>(std::move(comm));
}

}  // namespace ember
