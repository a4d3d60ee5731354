#include "train/schedule/parameter_sync.h"

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

}  // namespace

std::unique_ptr<ParameterSync> MakeInProcessSync(size_t trainers) {
  return std::make_unique<InProcessSync>(trainers);
}

}  // namespace ember
