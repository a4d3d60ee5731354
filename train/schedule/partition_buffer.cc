#include "train/schedule/partition_buffer.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"
#include "train/model/init.h"

namespace ember {

absl::Status PartitionBufferOptions::Validate() const {
  if (capacity < 1) return absl::InvalidArgumentError("partition buffer: capacity must be >= 1");
  if (dim < 1) {
    return absl::InvalidArgumentError(absl::StrCat("partition buffer: dim must be >= 1, got ", dim));
  }
  if (!(init_scale >= 0) || std::isinf(init_scale)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "partition buffer: init_scale must be finite and >= 0, got ", init_scale));
  }
  return absl::OkStatus();
}

PartitionBuffer::PartitionBuffer(Graph* graph, const PartitionBufferOptions& options,
                                 std::vector<uint64_t> locations, uint64_t write_version)
    : graph_(graph),
      options_(options),
      locations_(std::move(locations)),
      write_version_(write_version) {
  MutexLock lock(&mu_);
  resident_.resize(graph_->manifest().num_partitions);
}

PartitionBuffer::~PartitionBuffer() {
  if (pending_.valid()) pending_.wait();
}

uint32_t PartitionBuffer::resident_count() const {
  MutexLock lock(&mu_);
  uint32_t n = 0;
  for (const auto& r : resident_) n += r != nullptr;
  return n;
}

PartitionData* PartitionBuffer::Get(uint32_t p) {
  MutexLock lock(&mu_);
  EMBER_CHECK(p < resident_.size() && resident_[p] != nullptr);
  return resident_[p].get();
}

absl::Status PartitionBuffer::Load(uint32_t p) {
  const Manifest& m = graph_->manifest();
  auto data = std::make_unique<PartitionData>();
  data->partition = p;
  data->rows = m.partition_sizes[p];
  data->dim = options_.dim;
  if (!options_.frozen_rows.empty()) data->frozen_rows = options_.frozen_rows[p];
  if (options_.features) {
    RETURN_IF_ERROR(
        graph_->ReadPartitionFeatures(p, &data->feature_row_start, &data->feature_entries));
  }
  if (!options_.id_rows) return Install(std::move(data));
  data->embeddings.resize(data->rows * options_.dim);
  data->optimizer.assign(data->rows, 0.0f);
  // Rows [0, stored) come from the checkpoint; rows appended since (or all,
  // for a never-written partition) are initialised.
  uint64_t stored = 0;
  if (locations_[p] != 0) {
    ASSIGN_OR_RETURN(stored, graph_->TableRows(Table::kEmbeddings, p, locations_[p]));
    if (stored > data->rows) {
      return absl::DataLossError(absl::StrCat("partition ", p, " checkpoint has ", stored,
                                              " rows, more than its ", data->rows, " nodes"));
    }
    RETURN_IF_ERROR(graph_->ReadTable(Table::kEmbeddings, p, locations_[p],
                                      data->embeddings.data(), stored, options_.dim));
    RETURN_IF_ERROR(graph_->ReadTable(Table::kOptimizer, p, locations_[p],
                                      data->optimizer.data(), stored, 1));
  }
  if (stored < data->rows) {
    InitEmbeddings(InitDistribution::kNormal, options_.init_scale, options_.seed,
                   static_cast<int64_t>(m.PartitionBase(p) + stored),
                   static_cast<int64_t>(data->rows - stored), options_.dim,
                   data->embeddings.data() + stored * options_.dim);
  }
  return Install(std::move(data));
}

absl::Status PartitionBuffer::Install(std::unique_ptr<PartitionData> data) {
  ++loads_;
  const uint32_t p = data->partition;
  MutexLock lock(&mu_);
  resident_[p] = std::move(data);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<PartitionData>> PartitionBuffer::Take(uint32_t p) {
  RETURN_IF_ERROR(Quiesce());
  std::unique_ptr<PartitionData> data;
  {
    MutexLock lock(&mu_);
    if (p >= resident_.size() || resident_[p] == nullptr) return data;
    data = std::move(resident_[p]);
  }
  for (RowResidency* r : residencies_) {
    RETURN_IF_ERROR(r->SyncToHost(data.get()));
    r->Release(p);
  }
  return data;
}

absl::Status PartitionBuffer::Put(std::unique_ptr<PartitionData> data) {
  RETURN_IF_ERROR(Quiesce());
  const uint32_t p = data->partition;
  if (!options_.frozen_rows.empty()) data->frozen_rows = options_.frozen_rows[p];
  // Node features do not travel: they are read from this rank's graph.
  if (options_.features && data->feature_row_start.empty()) {
    RETURN_IF_ERROR(
        graph_->ReadPartitionFeatures(p, &data->feature_row_start, &data->feature_entries));
  }
  {
    MutexLock lock(&mu_);
    if (p >= resident_.size() || resident_[p] != nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("partition buffer: partition ", p, " received but already resident"));
    }
  }
  return Install(std::move(data));
}

absl::StatusOr<std::vector<uint32_t>> PartitionBuffer::Resident() {
  RETURN_IF_ERROR(Quiesce());
  std::vector<uint32_t> out;
  MutexLock lock(&mu_);
  for (uint32_t p = 0; p < resident_.size(); ++p) {
    if (resident_[p] != nullptr) out.push_back(p);
  }
  return out;
}

absl::Status PartitionBuffer::WriteTables(PartitionData& data) {
  for (RowResidency* r : residencies_) RETURN_IF_ERROR(r->SyncToHost(&data));
  if (options_.id_rows) {
    RETURN_IF_ERROR(graph_->WriteTable(Table::kEmbeddings, data.partition, write_version_,
                                       data.embeddings.data(), data.rows, options_.dim));
    RETURN_IF_ERROR(graph_->WriteTable(Table::kOptimizer, data.partition, write_version_,
                                       data.optimizer.data(), data.rows, 1));
  }
  locations_[data.partition] = write_version_;
  return absl::OkStatus();
}

absl::Status PartitionBuffer::SyncToHost(bool release) {
  auto newer_elsewhere = [&] {
    MutexLock lock(&mu_);
    for (const auto& data : resident_) {
      if (data == nullptr) continue;
      for (RowResidency* r : residencies_) {
        if (r->Home(data->partition) == RowHome::kDevice) return true;
      }
    }
    return false;
  };
  if (!release && !newer_elsewhere()) return absl::OkStatus();
  RETURN_IF_ERROR(Quiesce());
  std::vector<PartitionData*> resident;
  {
    MutexLock lock(&mu_);
    for (const auto& data : resident_) {
      if (data != nullptr) resident.push_back(data.get());
    }
  }
  for (PartitionData* data : resident) {
    for (RowResidency* r : residencies_) {
      RETURN_IF_ERROR(r->SyncToHost(data));
      if (release) r->Release(data->partition);
    }
  }
  return absl::OkStatus();
}

absl::Status PartitionBuffer::Evict(uint32_t p) {
  std::unique_ptr<PartitionData> data;
  {
    MutexLock lock(&mu_);
    data = std::move(resident_[p]);
  }
  EMBER_CHECK(data != nullptr);
  RETURN_IF_ERROR(WriteTables(*data));
  for (RowResidency* r : residencies_) r->Release(p);
  return absl::OkStatus();
}

int64_t PartitionBuffer::Victim(std::span<const uint32_t> keep,
                                std::span<const std::vector<uint32_t>> future) const {
  int64_t best = -1;
  size_t best_next = 0;
  MutexLock lock(&mu_);
  for (uint32_t p = 0; p < resident_.size(); ++p) {
    if (resident_[p] == nullptr) continue;
    if (std::find(keep.begin(), keep.end(), p) != keep.end()) continue;
    size_t next = future.size();  // never used again: best victim
    for (size_t t = 0; t < future.size(); ++t) {
      if (std::find(future[t].begin(), future[t].end(), p) != future[t].end()) {
        next = t;
        break;
      }
    }
    if (best < 0 || next > best_next) {
      best = p;
      best_next = next;
    }
  }
  return best;
}

absl::Status PartitionBuffer::MakeResident(std::span<const uint32_t> needed,
                                           std::span<const uint32_t> keep,
                                           std::span<const std::vector<uint32_t>> future,
                                           bool best_effort) {
  for (uint32_t p : needed) {
    {
      MutexLock lock(&mu_);
      if (resident_[p] != nullptr) continue;
    }
    if (resident_count() >= options_.capacity) {
      std::vector<uint32_t> protect(keep.begin(), keep.end());
      protect.insert(protect.end(), needed.begin(), needed.end());
      const int64_t victim = Victim(protect, future);
      if (victim < 0) {
        if (best_effort) return absl::OkStatus();
        return absl::InternalError(absl::StrCat(
            "partition buffer of ", options_.capacity, " cannot hold ", needed.size(),
            " partitions at once"));
      }
      RETURN_IF_ERROR(Evict(static_cast<uint32_t>(victim)));
    }
    RETURN_IF_ERROR(Load(p));
  }
  return absl::OkStatus();
}

absl::Status PartitionBuffer::Quiesce() {
  if (!pending_.valid()) return absl::OkStatus();
  return pending_.get();
}

absl::StatusOr<bool> PartitionBuffer::AllResident(std::span<const uint32_t> partitions) {
  RETURN_IF_ERROR(Quiesce());
  MutexLock lock(&mu_);
  for (uint32_t p : partitions) {
    if (resident_[p] == nullptr) return false;
  }
  return true;
}

absl::Status PartitionBuffer::Acquire(std::span<const uint32_t> needed,
                                      std::span<const std::vector<uint32_t>> future) {
  RETURN_IF_ERROR(Quiesce());
  if (needed.size() > options_.capacity) {
    return absl::InvalidArgumentError(absl::StrCat(
        "a round needs ", needed.size(), " partitions but --buffer-partitions is ",
        options_.capacity));
  }
  return MakeResident(needed, {}, future, /*best_effort=*/false);
}

void PartitionBuffer::Prefetch(std::vector<uint32_t> next, std::vector<uint32_t> pinned,
                               std::vector<std::vector<uint32_t>> future) {
  EMBER_CHECK(!pending_.valid());
  // Blocking I/O runs on its own thread so that it never occupies a oneTBB
  // worker that training needs.
  // A thread that cannot start (std::system_error) is the prefetch's
  // error, surfacing where its errors do, not an exception out of a
  // pipeline stage.
  try {
    pending_ = std::async(std::launch::async, [this, next = std::move(next),
                                               pinned = std::move(pinned),
                                               future = std::move(future)] {
      return MakeResident(next, pinned, future, /*best_effort=*/true);
    });
  } catch (const std::system_error& e) {
    std::promise<absl::Status> failed;
    failed.set_value(absl::ResourceExhaustedError(
        absl::StrCat("cannot start the partition prefetch thread: ", e.what())));
    pending_ = failed.get_future();
  }
}

absl::Status PartitionBuffer::WriteResident() {
  RETURN_IF_ERROR(Quiesce());
  std::vector<PartitionData*> all;
  {
    MutexLock lock(&mu_);
    for (auto& r : resident_) {
      if (r != nullptr) all.push_back(r.get());
    }
  }
  for (PartitionData* d : all) RETURN_IF_ERROR(WriteTables(*d));
  // Partitions not trained yet in this run get their initial rows, so that
  // a mid-epoch checkpoint of a fresh model is complete.
  for (uint32_t p = 0; p < locations_.size(); ++p) {
    if (locations_[p] != 0) continue;
    if (!options_.id_rows) {
      locations_[p] = write_version_;  // nothing to write
      continue;
    }
    RETURN_IF_ERROR(Load(p));
    --loads_;  // not a load for training
    RETURN_IF_ERROR(Evict(p));
  }
  return absl::OkStatus();
}

}  // namespace ember
