#include "train/trainers/device_trainer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <vector>

#include "absl/container/node_hash_map.h"
#include "absl/strings/str_cat.h"
#include "storage/base/mutex.h"
#include "storage/base/node_hash.h"
#include "storage/base/status_macros.h"
#include "train/model/adagrad.h"
#include "train/device/device_batch_plan.h"

namespace ember {
namespace {

absl::Status DeviceError(const std::string& error) {
  return error.empty() ? absl::OkStatus() : absl::InternalError(error);
}

// Byte offsets of arrays packed into one buffer, each 256-byte aligned.
class Packing {
 public:
  template <class T>
  size_t Add(int64_t count) {
    const size_t at = bytes_;
    bytes_ += (sizeof(T) * static_cast<size_t>(count) + 255) / 256 * 256;
    return at;
  }
  size_t bytes() const { return bytes_; }

 private:
  size_t bytes_ = 0;
};

template <class T>
T* At(void* base, size_t offset) {
  return reinterpret_cast<T*>(static_cast<char*>(base) + offset);
}

// A partition's rows and Adagrad state on the device.
struct DevicePartition {
  float* rows = nullptr;
  float* state = nullptr;
  bool newer = false;  // trained since the last SyncToHost
};

// A growable buffer in device or pinned memory.
struct Buffer {
  void* ptr = nullptr;
  size_t bytes = 0;
};

class DeviceTrainer final : public Trainer {
 public:
  DeviceTrainer(std::unique_ptr<DeviceOps> ops, const TrainOptions& options,
                const RelationParams& relations)
      : ops_(std::move(ops)),
        mode_(options.model.featurized),
        options_(options),
        endpoints_(UsesEndpointNegatives(options, relations.num_relations)),
        relations_(relations),
        rel_size_(relations.param_size),
        move_stream_(ops_->streams() - 1),
        slots_(ops_->streams() - 1),
        submit_mu_((slots_.size() + 1) / 2) {
    if (relations_.state.size() != relations_.params.size()) {
      relations_.state.assign(relations_.params.size(), 0.0f);
    }
    for (int i = 0; i < static_cast<int>(slots_.size()); ++i) {
      slots_[i].index = i;
      slots_[i].stream = i / 2;
      free_slots_.push_back(i);
    }
  }

  ~DeviceTrainer() override {
    for (Slot& s : slots_) {
      ops_->FreePinned(s.pinned.ptr);
      ops_->Free(s.device_in.ptr);
      ops_->Free(s.work.ptr);
    }
    for (auto& [p, part] : partitions_) FreePartition(part);
    ops_->Free(features_.rows);
    ops_->Free(features_.state);
  }

  // The device's copy of the feature table (featurized models).
  absl::Status InitFeatures(const FeatureTable& table) {
    RETURN_IF_ERROR(DeviceError(Upload(table.embeddings, table.optimizer, &features_)));
    feature_base_ = table;
    return absl::OkStatus();
  }

  absl::Status MergeFeatures(FeatureTable* table) override {
    if (features_.rows == nullptr) return absl::OkStatus();
    std::vector<float> rows(table->embeddings.size()), state(table->optimizer.size());
    RETURN_IF_ERROR(DeviceError(Download(features_, &rows, &state)));
    MergeChanges(rows, feature_base_.embeddings, &table->embeddings);
    MergeChanges(state, feature_base_.optimizer, &table->optimizer);
    return absl::OkStatus();
  }

  absl::Status RefreshFeatures(const FeatureTable& table) override {
    if (features_.rows == nullptr) return absl::OkStatus();
    feature_base_ = table;
    return DeviceError(Upload(table.embeddings, table.optimizer, &features_));
  }

  std::string device() const override { return ops_->name(); }
  int slots() const override { return static_cast<int>(slots_.size()); }
  RelationParams& relations() override { return relations_; }
  size_t device_peak_bytes() const override { return ops_->peak_bytes(); }
  StepTimes step_times() const override { return times_.Get(); }

  RowHome Home(uint32_t partition) const override {
    MutexLock lock(&part_mu_);
    const auto it = partitions_.find(partition);
    return it != partitions_.end() && it->second.newer ? RowHome::kDevice : RowHome::kHost;
  }

  absl::Status SyncToHost(PartitionData* host) override {
    MutexLock lock(&part_mu_);
    const auto it = partitions_.find(host->partition);
    if (it == partitions_.end() || !it->second.newer) return absl::OkStatus();
    RETURN_IF_ERROR(DeviceError(Download(it->second, &host->embeddings, &host->optimizer)));
    it->second.newer = false;
    return absl::OkStatus();
  }

  void Release(uint32_t partition) override {
    MutexLock lock(&part_mu_);
    const auto it = partitions_.find(partition);
    if (it == partitions_.end()) return;
    FreePartition(it->second);
    partitions_.erase(it);
  }

  absl::StatusOr<double> TrainBatch(const BucketTask& task, const BatchRange& batch,
                                    std::span<const Edge> edges) override {
    if (edges.empty()) return 0.0;
    Slot& slot = AcquireSlot();
    absl::StatusOr<double> loss = TrainOn(slot, task, batch, edges);
    ReleaseSlot(slot);
    return loss;
  }

 private:
  // *merged += mine - base, element by element; exactly mine where *merged
  // still equals base (no other trainer changed it), so that a lone trainer's
  // values pass through without rounding.
  static void MergeChanges(const std::vector<float>& mine, const std::vector<float>& base,
                           std::vector<float>* merged) {
    for (size_t i = 0; i < mine.size(); ++i) {
      float& m = (*merged)[i];
      m = m == base[i] ? mine[i] : m + (mine[i] - base[i]);
    }
  }

  // Slots 2s and 2s + 1 share stream s (double-buffered): while one's step
  // runs, the other plans its batch and then enqueues it behind.
  struct Slot {
    int index = 0;
    int stream = 0;
    DeviceBatchPlanner planner;
    Buffer pinned;     // upload, then download
    Buffer device_in;  // the upload's device copy
    Buffer work;       // the step's work buffers
  };

  // Offsets of one step's arrays in the slot's buffers.
  struct Layout {
    Packing in, out, work;
    // In (pinned and device).
    size_t q_row, k_row, q_slot, u_node, u_table, rel, u_feat_start, u_feat, u_weight, f_id;
    size_t row_loss_out, drel_out;  // out (pinned, after in)
    size_t x, dx, q, k, q_aux, k_aux, s, dq, dk, coef_q, coef_k, row_loss, drel, dfeat;  // work
  };

  // Allocates *dev (unless it holds rows) and copies rows and state into it
  // on the moving stream, then waits; on error *dev holds nothing.
  std::string Upload(const std::vector<float>& rows, const std::vector<float>& state,
                     DevicePartition* dev) {
    std::string error;
    for (auto [host, device] : {std::pair{&rows, &dev->rows}, {&state, &dev->state}}) {
      const size_t bytes = sizeof(float) * host->size();
      void* p = *device;
      if (error.empty() && p == nullptr) error = ops_->Alloc(bytes, &p);
      *device = static_cast<float*>(p);
      if (error.empty()) error = ops_->CopyToDevice(move_stream_, p, host->data(), bytes);
    }
    if (error.empty()) error = ops_->Synchronize(move_stream_);
    if (!error.empty()) FreePartition(*dev);
    return error;
  }
  // Copies dev's rows and state into rows and state (sized already), and waits.
  std::string Download(const DevicePartition& dev, std::vector<float>* rows,
                       std::vector<float>* state) {
    std::string error = ops_->CopyToHost(move_stream_, rows->data(), dev.rows,
                                         sizeof(float) * rows->size());
    if (error.empty()) {
      error = ops_->CopyToHost(move_stream_, state->data(), dev.state, sizeof(float) * state->size());
    }
    return error.empty() ? ops_->Synchronize(move_stream_) : error;
  }

  void FreePartition(DevicePartition& part) {
    ops_->Free(part.rows);
    ops_->Free(part.state);
    part = DevicePartition{};
  }

  // Waits for a free slot: the pipeline may call with more batches than
  // slots (a batch beyond them waits, as it would for a CPU core).
  Slot& AcquireSlot() {
    MutexLock lock(&slot_mu_);
    slot_mu_.Await(absl::Condition(
        +[](std::vector<int>* free) { return !free->empty(); }, &free_slots_));
    const int i = free_slots_.back();
    free_slots_.pop_back();
    return slots_[i];
  }
  void ReleaseSlot(const Slot& slot) {
    MutexLock lock(&slot_mu_);
    free_slots_.push_back(slot.index);
  }

  // The device copy of `host`, made on first use.
  absl::StatusOr<DevicePartition*> Resident(const PartitionData& host) {
    MutexLock lock(&part_mu_);
    auto [it, added] = partitions_.try_emplace(host.partition);
    DevicePartition& part = it->second;
    if (!added) return &part;
    if (const std::string error = Upload(host.embeddings, host.optimizer, &part); !error.empty()) {
      partitions_.erase(it);
      return absl::ResourceExhaustedError(absl::StrCat(
          device(), ": cannot hold partition ", host.partition, " (", host.rows, " rows x ",
          host.dim, "): ", error, "; train with more partitions"));
    }
    return &part;
  }

  static absl::Status Reserve(DeviceOps& ops, Buffer* b, size_t bytes, bool pinned) {
    if (b->bytes >= bytes) return absl::OkStatus();
    pinned ? ops.FreePinned(b->ptr) : ops.Free(b->ptr);
    b->ptr = nullptr;
    b->bytes = 0;
    const size_t want = bytes + bytes / 2;  // room for larger batches
    RETURN_IF_ERROR(DeviceError(pinned ? ops.AllocPinned(want, &b->ptr) : ops.Alloc(want, &b->ptr)));
    b->bytes = want;
    return absl::OkStatus();
  }

  static Layout LayOut(const device::StepShape& sh, const DeviceBatchPlan& plan, int64_t slots) {
    const int64_t distinct = static_cast<int64_t>(plan.u_node.size());
    Layout l;
    const int64_t qr = sh.query_rows(), kr = sh.candidate_rows(), d = sh.dim;
    const int64_t rel = slots * sh.rel_size;
    l.q_row = l.in.Add<int32_t>(qr);
    l.k_row = l.in.Add<int32_t>(kr);
    l.q_slot = l.in.Add<int32_t>(int64_t{sh.chunks} * sh.chunk);
    l.u_node = l.in.Add<uint32_t>(distinct);
    l.u_table = l.in.Add<uint8_t>(distinct);
    l.rel = l.in.Add<float>(rel);
    l.u_feat_start = l.in.Add<int64_t>(plan.u_feat_start.size());
    l.u_feat = l.in.Add<int32_t>(plan.u_feat.size());
    l.u_weight = l.in.Add<float>(plan.u_weight.size());
    l.f_id = l.in.Add<uint32_t>(plan.f_id.size());
    l.row_loss_out = l.out.Add<float>(qr);
    l.drel_out = l.out.Add<float>(rel);
    l.x = l.work.Add<float>(distinct * d);
    l.dx = l.work.Add<float>(distinct * d);
    l.q = l.work.Add<float>(qr * d);
    l.dq = l.work.Add<float>(qr * d);
    l.k = l.work.Add<float>(kr * d);
    l.dk = l.work.Add<float>(kr * d);
    l.q_aux = l.work.Add<float>(qr);
    l.coef_q = l.work.Add<float>(qr);
    l.row_loss = l.work.Add<float>(qr);
    l.k_aux = l.work.Add<float>(kr);
    l.coef_k = l.work.Add<float>(kr);
    l.s = l.work.Add<float>(sh.matrices() * sh.chunk * sh.candidates());
    l.drel = l.work.Add<float>(rel);
    l.dfeat = l.work.Add<float>(static_cast<int64_t>(plan.f_id.size()) * d);
    return l;
  }

  absl::StatusOr<double> TrainOn(Slot& slot, const BucketTask& task, const BatchRange& batch,
                                 std::span<const Edge> edges) {
    StepClock clock;
    ASSIGN_OR_RETURN(DevicePartition * src, Resident(*task.src));
    DevicePartition* dst = src;
    if (task.dst != task.src) {
      ASSIGN_OR_RETURN(dst, Resident(*task.dst));
    }

    DeviceBatchInput in;
    in.chunk = options_.pipeline.chunk_size;
    in.negs = options_.pipeline.num_uniform_negs;
    in.endpoints = endpoints_ && task.same_type;
    in.same_partition = task.src == task.dst;
    in.src_rows = task.src->rows;
    in.dst_rows = task.dst->rows;
    in.seed = Mix64(task.seed, batch.index);
    in.featurized = static_cast<int>(mode_);
    in.feature_row_start[0] = task.src->feature_row_start.data();
    in.feature_entries[0] = task.src->feature_entries.data();
    in.feature_row_start[1] = task.dst->feature_row_start.data();
    in.feature_entries[1] = task.dst->feature_entries.data();
    const DeviceBatchPlan& plan = slot.planner.Plan(edges, in);
    const ModelOptions& m = options_.model;
    const device::StepShape sh =
        ShapeOf(plan, in, m.dim, static_cast<int>(m.op), static_cast<int>(m.comparator),
                static_cast<int>(m.loss), m.margin, rel_size_);
    const int64_t distinct = static_cast<int64_t>(plan.u_node.size());
    const int64_t rel_slots = rel_size_ > 0 ? static_cast<int64_t>(plan.slot_relation.size()) : 0;
    const Layout l = LayOut(sh, plan, rel_slots);
    RETURN_IF_ERROR(Reserve(*ops_, &slot.pinned, l.in.bytes() + l.out.bytes(), true));
    RETURN_IF_ERROR(Reserve(*ops_, &slot.device_in, l.in.bytes(), false));
    RETURN_IF_ERROR(Reserve(*ops_, &slot.work, l.work.bytes(), false));

    // The upload: the plan and the relations' snapshot.
    void* up = slot.pinned.ptr;
    auto put = [up](size_t offset, const auto& v) {
      if (!v.empty()) std::memcpy(static_cast<char*>(up) + offset, v.data(), sizeof(v[0]) * v.size());
    };
    put(l.q_row, plan.q_row);
    put(l.k_row, plan.k_row);
    put(l.q_slot, plan.q_slot);
    put(l.u_node, plan.u_node);
    put(l.u_table, plan.u_table);
    put(l.u_feat_start, plan.u_feat_start);
    put(l.u_feat, plan.u_feat);
    put(l.u_weight, plan.u_weight);
    put(l.f_id, plan.f_id);
    if (rel_slots > 0) {
      ReaderMutexLock lock(&rel_mu_);
      float* rel = At<float>(up, l.rel);
      for (int64_t r = 0; r < rel_slots; ++r) {
        std::copy_n(relations_.Of(plan.slot_relation[r]), rel_size_, rel + r * rel_size_);
      }
    }
    void* dev_in = slot.device_in.ptr;
    void* work = slot.work.ptr;
    device::StepArgs a;
    a.q_row = At<int32_t>(dev_in, l.q_row);
    a.k_row = At<int32_t>(dev_in, l.k_row);
    a.q_slot = At<int32_t>(dev_in, l.q_slot);
    a.u_node = At<uint32_t>(dev_in, l.u_node);
    a.u_table = At<uint8_t>(dev_in, l.u_table);
    a.rel = rel_slots > 0 ? At<float>(dev_in, l.rel) : nullptr;
    a.slots = rel_slots;
    a.distinct = distinct;
    a.rows[0] = src->rows;
    a.rows[1] = dst->rows;
    a.state[0] = src->state;
    a.state[1] = dst->state;
    a.frozen[0] = task.src->frozen_rows;
    a.frozen[1] = task.dst->frozen_rows;
    a.lr = options_.optimizer.lr * batch.lr_scale;
    if (mode_ != FeaturizedMode::kOff) {
      a.u_feat_start = At<int64_t>(dev_in, l.u_feat_start);
      a.u_feat = At<int32_t>(dev_in, l.u_feat);
      a.u_weight = At<float>(dev_in, l.u_weight);
      a.f_id = At<uint32_t>(dev_in, l.f_id);
      a.distinct_features = static_cast<int64_t>(plan.f_id.size());
      a.features = features_.rows;
      a.feature_state = features_.state;
      a.dfeat = At<float>(work, l.dfeat);
    }
    for (auto [field, offset] : {std::pair{&a.x, l.x}, {&a.dx, l.dx}, {&a.q, l.q}, {&a.k, l.k},
                                 {&a.q_aux, l.q_aux}, {&a.k_aux, l.k_aux}, {&a.s, l.s},
                                 {&a.dq, l.dq}, {&a.dk, l.dk}, {&a.coef_q, l.coef_q},
                                 {&a.coef_k, l.coef_k}, {&a.row_loss, l.row_loss},
                                 {&a.drel, l.drel}}) {
      *field = At<float>(work, offset);
    }
    const int stream = slot.stream;
    const int timer = slot.index;
    void* down = static_cast<char*>(up) + l.in.bytes();
    const double plan_seconds = clock.Lap();
    std::string error;
    {
      // One thread enqueues on a stream at a time (device_ops.h).
      std::lock_guard<std::mutex> lock(submit_mu_[stream]);
      error = ops_->CopyToDevice(stream, dev_in, up, l.in.bytes());
      if (error.empty()) error = ops_->StartTimer(stream, timer);
      if (error.empty()) error = ops_->Step(stream, sh, a);
      if (error.empty()) {
        error = ops_->CopyToHost(stream, At<float>(down, l.row_loss_out), a.row_loss,
                                 sizeof(float) * sh.query_rows());
      }
      if (error.empty() && rel_slots > 0) {
        error = ops_->CopyToHost(stream, At<float>(down, l.drel_out), a.drel,
                                 sizeof(float) * rel_slots * rel_size_);
      }
      if (error.empty()) error = ops_->StopTimer(stream, timer);
    }
    const double submit = clock.Lap();
    // The slot's own work, not the stream's: the other slot of the stream
    // may be enqueueing (or capturing) behind it.
    if (error.empty()) error = ops_->WaitTimer(timer);
    const double wait = clock.Lap();
    double device_seconds = 0;
    if (error.empty()) error = ops_->TimerSeconds(timer, &device_seconds);
    RETURN_IF_ERROR(DeviceError(error));
    {
      MutexLock lock(&part_mu_);
      src->newer = dst->newer = true;
    }

    const float* row_loss = At<float>(down, l.row_loss_out);
    double loss = 0;
    for (int64_t r = 0; r < sh.query_rows(); ++r) loss += row_loss[r];
    if (rel_slots > 0 && !options_.only_new_edges) {
      const float* drel = At<float>(down, l.drel_out);
      MutexLock lock(&rel_mu_);
      for (int64_t r = 0; r < rel_slots; ++r) {
        const uint32_t rel = plan.slot_relation[r];
        AdagradDenseUpdate(relations_.Of(rel), relations_.state.data() + size_t{rel} * rel_size_,
                           drel + r * rel_size_, rel_size_,
                           a.lr * options_.optimizer.relation_lr_scale);
      }
    }
    times_.Add(plan_seconds, submit, device_seconds, wait, clock.Lap());
    return loss;
  }

  // Seconds since it was made, or since the last Lap.
  class StepClock {
   public:
    double Lap() {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - last_).count();
      last_ = now;
      return seconds;
    }

   private:
    std::chrono::steady_clock::time_point last_ = std::chrono::steady_clock::now();
  };

  // StepTimes summed by concurrent slots without a lock (nanoseconds).
  class StepTimeTotals {
   public:
    void Add(double plan, double submit, double device, double wait, double finish) {
      ++steps_;
      for (auto [total, seconds] : {std::pair{&plan_, plan}, {&submit_, submit},
                                    {&device_, device}, {&wait_, wait}, {&finish_, finish}}) {
        *total += static_cast<int64_t>(seconds * 1e9);
      }
    }
    StepTimes Get() const {
      StepTimes t;
      t.steps = steps_;
      t.plan = plan_ / 1e9;
      t.submit = submit_ / 1e9;
      t.device = device_ / 1e9;
      t.wait = wait_ / 1e9;
      t.finish = finish_ / 1e9;
      return t;
    }

   private:
    std::atomic<uint64_t> steps_{0};
    std::atomic<int64_t> plan_{0}, submit_{0}, device_{0}, wait_{0}, finish_{0};
  };

  const std::unique_ptr<DeviceOps> ops_;
  const FeaturizedMode mode_;
  DevicePartition features_;     // the feature table's copy (featurized models)
  FeatureTable feature_base_;    // the table as of the last RefreshFeatures
  const TrainOptions options_;
  const bool endpoints_;
  Mutex rel_mu_;
  RelationParams relations_;  // guarded by rel_mu_ during TrainBatch
  const int rel_size_;
  const int move_stream_;
  mutable Mutex part_mu_;
  // Node map: TrainOn keeps pointers to entries while others are added.
  absl::node_hash_map<uint32_t, DevicePartition> partitions_;  // guarded by part_mu_
  Mutex slot_mu_;
  std::vector<Slot> slots_;
  std::vector<int> free_slots_;  // guarded by slot_mu_
  std::vector<std::mutex> submit_mu_;  // one per step stream
  StepTimeTotals times_;
};

}  // namespace

absl::Status CheckDeviceModel(const TrainOptions& options) {
  const ModelOptions& m = options.model;
  if (!SupportsMixedChunks(m)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUDA trainer trains the models whose chunks can mix relations (op none with any "
        "comparator, diagonal or complex_diagonal with dot, translation with l2); --operator ",
        std::string(OperatorName(m.op)), " --comparator ",
        std::string(ComparatorName(m.comparator)),
        " trains on --devices cpu"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Trainer>> MakeDeviceTrainer(std::unique_ptr<DeviceOps> ops,
                                                           const TrainOptions& options,
                                                           const RelationParams& relations,
                                                           FeatureTable* features) {
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(CheckDeviceModel(options));
  EMBER_CHECK(ops != nullptr && ops->streams() >= 2);
  if (relations.param_size != RelationParamSize(options.model.op, options.model.dim)) {
    return absl::InvalidArgumentError("relation parameters do not match the model");
  }
  if ((options.model.featurized != FeaturizedMode::kOff) !=
      (features != nullptr && features->dim == options.model.dim)) {
    return absl::InvalidArgumentError("feature table does not match the model");
  }
  auto trainer = std::make_unique<DeviceTrainer>(std::move(ops), options, relations);
  if (features != nullptr) RETURN_IF_ERROR(trainer->InitFeatures(*features));
  return std::unique_ptr<Trainer>(std::move(trainer));
}

}  // namespace ember
