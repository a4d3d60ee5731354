#include "train/schedule/partition_buffer.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/base/status_macros.h"
#include "storage/table_files.h"
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

PartitionPin::PartitionPin(PartitionPin&& other) noexcept
    : buffer_(std::exchange(other.buffer_, nullptr)), data_(std::exchange(other.data_, nullptr)) {}

PartitionPin& PartitionPin::operator=(PartitionPin&& other) noexcept {
  if (this != &other) {
    Release();
    buffer_ = std::exchange(other.buffer_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
  }
  return *this;
}

PartitionPin::~PartitionPin() { Release(); }

void PartitionPin::Release() {
  if (buffer_ != nullptr) buffer_->Unpin(data_->partition);
  buffer_ = nullptr;
  data_ = nullptr;
}

absl::StatusOr<std::unique_ptr<PartitionBuffer>> PartitionBuffer::Make(
    Graph* graph, const PartitionBufferOptions& options, std::vector<uint64_t> locations,
    uint64_t write_version, IoExecutor* io) {
  RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<PartitionBuffer>(
      new PartitionBuffer(graph, options, std::move(locations), write_version, io));
}

PartitionBuffer::PartitionBuffer(Graph* graph, const PartitionBufferOptions& options,
                                 std::vector<uint64_t> locations, uint64_t write_version,
                                 IoExecutor* io)
    : graph_(graph),
      io_(io),
      options_(options),
      locations_(std::move(locations)),
      write_version_(write_version) {
  MutexLock lock(&mu_);
  resident_.resize(graph_->manifest().num_partitions);
  pins_.assign(resident_.size(), 0);
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

PartitionPin PartitionBuffer::Pin(uint32_t p) {
  MutexLock lock(&mu_);
  EMBER_CHECK(p < resident_.size() && resident_[p] != nullptr);
  ++pins_[p];
  return PartitionPin(this, resident_[p].get());
}

void PartitionBuffer::Unpin(uint32_t p) {
  MutexLock lock(&mu_);
  EMBER_CHECK(pins_[p] > 0);
  --pins_[p];
}

uint32_t PartitionBuffer::pins(uint32_t p) const {
  MutexLock lock(&mu_);
  return pins_[p];
}

absl::Status PartitionBuffer::Load(uint32_t p) {
  ASSIGN_OR_RETURN(std::unique_ptr<PartitionData> data, Read(p));
  return Install(std::move(data));
}

absl::StatusOr<std::unique_ptr<PartitionData>> PartitionBuffer::TakeOrRead(uint32_t p) {
  ASSIGN_OR_RETURN(std::unique_ptr<PartitionData> data, Take(p));
  if (data != nullptr) return data;
  ++loads_;
  return Read(p);
}

absl::StatusOr<std::unique_ptr<PartitionData>> PartitionBuffer::Read(uint32_t p) const {
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
  if (!options_.id_rows) return data;
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
  return data;
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
    if (pins_[p] > 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "partition buffer: partition ", p, " cannot leave while batches train it"));
    }
    data = std::move(resident_[p]);
  }
  for (RowResidency* r : residencies_) {
    RETURN_IF_ERROR(r->SyncToHost(data.get()));
    r->Release(p);
  }
  return data;
}

absl::Status PartitionBuffer::CheckReceived(const PartitionData& data) const {
  const Manifest& m = graph_->manifest();
  const uint32_t p = data.partition;
  if (p >= m.num_partitions) {
    return absl::DataLossError(absl::StrCat("partition ", p, " received, but ", graph_->dir(),
                                            " has ", m.num_partitions, " partitions"));
  }
  const uint64_t rows = m.partition_sizes[p];
  const uint64_t embedding_floats = options_.id_rows ? rows * options_.dim : 0;
  const uint64_t optimizer_floats = options_.id_rows ? rows : 0;
  if (data.rows == rows && data.dim == options_.dim && data.embeddings.size() == embedding_floats &&
      data.optimizer.size() == optimizer_floats) {
    return absl::OkStatus();
  }
  return absl::DataLossError(absl::StrCat(
      "partition ", p, " received with ", data.rows, " rows of dim ", data.dim, " (",
      data.embeddings.size(), " embedding and ", data.optimizer.size(),
      " optimizer floats), but here it has ", rows, " rows of dim ", options_.dim, " (",
      embedding_floats, " and ", optimizer_floats, " floats; ", graph_->dir(), ")"));
}

absl::Status PartitionBuffer::WriteCopy(PartitionData& data) {
  RETURN_IF_ERROR(CheckReceived(data));
  RETURN_IF_ERROR(WriteTables(data));
  return MakeTablesDurable(data.partition);
}

absl::Status PartitionBuffer::WriteDurably(uint32_t p) {
  RETURN_IF_ERROR(Quiesce());
  PartitionData* data = nullptr;
  {
    MutexLock lock(&mu_);
    if (p < resident_.size()) data = resident_[p].get();
  }
  if (data == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("partition buffer: partition ", p, " is not resident to be written"));
  }
  RETURN_IF_ERROR(WriteTables(*data));
  return MakeTablesDurable(p);
}

absl::Status PartitionBuffer::MakeTablesDurable(uint32_t p) {
  // Staged table files are durable once written.
  if (!options_.id_rows || options_.stage_tables) return absl::OkStatus();
  return graph_->SyncTables(p);
}

absl::Status PartitionBuffer::TakeInStaged(uint32_t p) {
  if (options_.id_rows) {
    const std::string& dir = graph_->dir();
    for (const Table table : {Table::kEmbeddings, Table::kOptimizer}) {
      RETURN_IF_ERROR(graph_->IngestTableFile(table, p, write_version_,
                                              IncomingTableFile(dir, write_version_, table, p)));
      ASSIGN_OR_RETURN(const uint64_t rows, graph_->TableRows(table, p, write_version_));
      const uint64_t expected = graph_->manifest().partition_sizes[p];
      if (rows != expected) {
        return absl::DataLossError(absl::StrCat("partition ", p, ": a table staged for version ",
                                                write_version_, " holds ", rows,
                                                " rows, the graph gives the partition ", expected));
      }
    }
  }
  locations_[p] = write_version_;
  return absl::OkStatus();
}

absl::Status PartitionBuffer::Put(std::unique_ptr<PartitionData> data) {
  RETURN_IF_ERROR(CheckReceived(*data));
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
    // Into the graph, or staged beside it for the graph's writer.
    const uint32_t p = data.partition;
    auto write = [&](Table table, const float* rows, uint32_t width) {
      return options_.stage_tables
                 ? WriteTableFile(IncomingTableFile(graph_->dir(), write_version_, table, p), table,
                                  write_version_, rows, data.rows, width)
                 : graph_->WriteTable(table, p, write_version_, rows, data.rows, width);
    };
    RETURN_IF_ERROR(
        write(Table::kEmbeddings, data.embeddings.data(), static_cast<uint32_t>(options_.dim)));
    RETURN_IF_ERROR(write(Table::kOptimizer, data.optimizer.data(), 1));
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

absl::Status PartitionBuffer::Evict(std::unique_ptr<PartitionData> data) {
  RETURN_IF_ERROR(WriteTables(*data));
  for (RowResidency* r : residencies_) r->Release(data->partition);
  return absl::OkStatus();
}

std::unique_ptr<PartitionData> PartitionBuffer::TakeVictim(
    std::span<const uint32_t> keep, std::span<const std::vector<uint32_t>> future) {
  int64_t best = -1;
  size_t best_next = 0;
  MutexLock lock(&mu_);
  for (uint32_t p = 0; p < resident_.size(); ++p) {
    if (resident_[p] == nullptr || pins_[p] > 0) continue;
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
  if (best < 0) return nullptr;
  return std::move(resident_[best]);
}

absl::Status PartitionBuffer::MakeResident(std::span<const uint32_t> needed,
                                           std::span<const std::vector<uint32_t>> future,
                                           bool best_effort) {
  for (uint32_t p : needed) {
    {
      MutexLock lock(&mu_);
      if (resident_[p] != nullptr) continue;
    }
    if (resident_count() >= options_.capacity) {
      std::unique_ptr<PartitionData> victim = TakeVictim(needed, future);
      if (victim == nullptr) {
        if (best_effort) return absl::OkStatus();
        return absl::InternalError(absl::StrCat(
            "partition buffer of ", options_.capacity, " cannot hold ", needed.size(),
            " partitions at once"));
      }
      RETURN_IF_ERROR(Evict(std::move(victim)));
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
  return MakeResident(needed, future, /*best_effort=*/false);
}

absl::Status PartitionBuffer::FitCapacity(std::span<const uint32_t> keep,
                                          std::span<const std::vector<uint32_t>> future) {
  RETURN_IF_ERROR(Quiesce());
  while (resident_count() > options_.capacity) {
    std::unique_ptr<PartitionData> victim = TakeVictim(keep, future);
    if (victim == nullptr) break;  // the rest are pinned or kept
    RETURN_IF_ERROR(Evict(std::move(victim)));
  }
  return absl::OkStatus();
}

void PartitionBuffer::Prefetch(std::vector<uint32_t> next,
                               std::vector<std::vector<uint32_t>> future) {
  EMBER_CHECK(!pending_.valid());
  std::promise<absl::Status> done;
  pending_ = done.get_future();
  // Blocking I/O runs on the I/O executor so that it never occupies a
  // oneTBB worker that training needs. A thread that cannot start is the
  // prefetch's error, surfacing where its errors do, not an exception out
  // of a pipeline stage.
  const absl::Status launched =
      io_->Submit([this, done = std::move(done), next = std::move(next),
                   future = std::move(future)]() mutable {
        done.set_value(MakeResident(next, future, /*best_effort=*/true));
      });
  if (!launched.ok()) {
    std::promise<absl::Status> failed;
    failed.set_value(absl::ResourceExhaustedError(
        absl::StrCat("cannot start the partition prefetch thread: ", launched.message())));
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
    std::unique_ptr<PartitionData> data;
    {
      MutexLock lock(&mu_);
      data = std::move(resident_[p]);
    }
    RETURN_IF_ERROR(Evict(std::move(data)));
  }
  return absl::OkStatus();
}

}  // namespace ember
