#include "train/checkpointer.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "partition/bucket_order.h"
#include "storage/checkpoint_space.h"
#include "storage/base/status_macros.h"

namespace ember {

Checkpointer::Checkpointer(Graph* graph, const TrainOptions& options, const RunShape& shape,
                           bool writer)
    : graph_(graph), options_(options), shape_(shape), writer_(writer) {}

absl::Status Checkpointer::CheckResumable(const StoredModel& stored) const {
  const ModelOptions& s = stored.model;
  if (s.dim != options_.model.dim || s.op != options_.model.op ||
      s.comparator != options_.model.comparator || s.featurized != options_.model.featurized ||
      s.reciprocal != options_.model.reciprocal) {
    return absl::FailedPreconditionError(
        absl::StrCat(graph_->dir(), " holds a checkpoint trained with --dim ", s.dim,
                     " --operator ", std::string(OperatorName(s.op)), " --comparator ",
                     std::string(ComparatorName(s.comparator)), " --featurized ",
                     std::string(FeaturizedModeName(s.featurized)),
                     " --reciprocal=", s.reciprocal ? "true" : "false",
                     "; pass the same options to resume, or --from-scratch to start over"));
  }
  const TrainPosition& saved = stored.position;
  const std::string weights(EdgeWeightModeName(options_.edge_weights));
  if (graph_->manifest().edge_weights && !saved.edge_weights.empty() &&
      saved.edge_weights != weights) {
    return absl::FailedPreconditionError(absl::StrCat(
        graph_->dir(), " holds a checkpoint trained with --weights ", saved.edge_weights,
        ", and this run asks for --weights ", weights, "; pass --weights ", saved.edge_weights,
        " (or leave it out) to resume, or "
        "--from-scratch to start over"));
  }
  if (saved.next_round == 0) return absl::OkStatus();
  if (std::max<uint32_t>(saved.world_size, 1) != shape_.world_size) {
    return absl::FailedPreconditionError(absl::StrCat(
        graph_->dir(), " was stopped mid-epoch by a run of ",
        std::max<uint32_t>(saved.world_size, 1), " rank(s); resume it with as many ranks "
        "(this run has ", shape_.world_size, "), or pass --from-scratch"));
  }
  // What shapes the rest of the epoch's schedule, as stopped and as now.
  struct Differ {
    const char* what;
    std::string saved, now;
  };
  std::vector<Differ> differ;
  const std::string order(BucketOrderName(options_.schedule.bucket_order));
  if (saved.seed != options_.seed) {
    differ.push_back({"--seed", absl::StrCat(saved.seed), absl::StrCat(options_.seed)});
  }
  if (saved.bucket_order != order) differ.push_back({"--bucket-order", saved.bucket_order, order});
  if (saved.buffer_partitions != shape_.buffer_partitions) {
    // Across ranks, the capacity beta's order reads (P for other orders).
    differ.push_back({shape_.world_size > 1
                          ? "a bucket-order buffer (from --memory-budget, --buffer-partitions) of"
                          : "--buffer-partitions",
                      absl::StrCat(saved.buffer_partitions),
                      absl::StrCat(shape_.buffer_partitions)});
  }
  if (saved.round_size != shape_.round_size) {
    differ.push_back({"rounds (from --trainers) of", absl::StrCat(saved.round_size),
                      absl::StrCat(shape_.round_size)});
  }
  if (saved.round_lookahead != shape_.round_lookahead) {
    // Only another version of ember forms rounds otherwise for the same
    // options.
    differ.push_back({"rounds formed with a look-ahead of", absl::StrCat(saved.round_lookahead),
                      absl::StrCat(shape_.round_lookahead)});
  }
  if (differ.empty()) return absl::OkStatus();
  std::string what;
  for (const Differ& d : differ) {
    absl::StrAppend(&what, what.empty() ? "" : "; ", d.what, " ", d.saved, ", this run ", d.now);
  }
  return absl::FailedPreconditionError(absl::StrCat(
      graph_->dir(), " was stopped mid-epoch by a run of another schedule: ", what,
      "; resume it with the same --seed, --bucket-order, --memory-budget, --buffer-partitions "
      "and --trainers, or pass --from-scratch"));
}

absl::StatusOr<RestoredCheckpoint> Checkpointer::Restore() {
  const Manifest& m = graph_->manifest();
  const uint32_t P = m.num_partitions;
  committed_version_ = m.training.checkpoint_version;
  committed_locations_.assign(P, 0);
  write_version_ = committed_version_ + 1;
  RestoredCheckpoint out;
  out.locations.assign(P, 0);
  // An in-memory run starts from scratch and leaves the checkpoint alone.
  if (options_.in_memory) return out;
  std::optional<StoredModel> stored;
  if (committed_version_ > 0) {
    // A rank's own copy holds its share of the rows; RankLayout gathers
    // the rest from the other ranks' copies.
    const bool own_copy = options_.rank_copies && shape_.world_size > 1;
    ASSIGN_OR_RETURN(stored, LoadStoredModel(*graph_, own_copy ? RowsElsewhere::kAllow
                                                               : RowsElsewhere::kRefuse));
    committed_locations_ = stored->partition_versions;
  }
  if (writer_) {
    RETURN_IF_ERROR(
        RemoveUncommittedCheckpoints(*graph_, committed_version_, committed_locations_));
    // Table files other ranks staged for a checkpoint never committed.
    RETURN_IF_ERROR(graph_->RemoveIncomingTables());
  }
  if (!stored.has_value() || options_.from_scratch) return out;
  RETURN_IF_ERROR(CheckResumable(*stored));
  out.resumed = true;
  out.start_epoch = static_cast<int>(stored->epochs_done);
  out.start_round = stored->position.next_round;
  out.relations = std::move(stored->relations);
  if (stored->model.featurized != FeaturizedMode::kOff) {
    out.features = std::move(stored->features);
  }
  out.locations = committed_locations_;
  return out;
}

absl::Status Checkpointer::CheckSpace() const {
  if (options_.in_memory || !writer_) return absl::OkStatus();
  ASSIGN_OR_RETURN(const uint64_t needed,
                   NextCheckpointBytes(*graph_, static_cast<uint32_t>(options_.model.dim),
                                       HasIdRows(options_.model.featurized)));
  absl::Status s = CheckFreeSpace(graph_->dir(), needed);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(s.message(), "; the last checkpoint (",
                                             committed_version_, ") is whole: free space, "
                                             "then run the same command to resume"));
}

absl::Status Checkpointer::Write(PartitionBuffer* buffer, const RelationParams& relations,
                                 const FeatureTable* features, int epoch, uint64_t next_round,
                                 int epochs_done, bool rows_written) {
  if (!rows_written) RETURN_IF_ERROR(buffer->WriteResident());
  const absl::Status committed =
      Commit(buffer->locations(), relations, features, epoch, next_round, epochs_done);
  buffer->set_write_version(write_version_);
  return committed;
}

uint64_t CopiedCheckpoint::bytes() const {
  uint64_t b = 0;
  for (const Rows& r : partitions) {
    b += (r.embeddings.size() + r.optimizer.size()) * sizeof(float);
  }
  return b;
}

void Checkpointer::Copy(PartitionBuffer* buffer, uint32_t partitions,
                        const RelationParams& relations, int epochs_done, CopiedCheckpoint* copy) {
  copy->relations = relations;
  copy->epochs_done = epochs_done;
  copy->partitions.resize(partitions);
  for (uint32_t p = 0; p < partitions; ++p) {
    const PartitionData* d = buffer->Get(p);
    CopiedCheckpoint::Rows& r = copy->partitions[p];
    r.partition = p;
    r.rows = d->rows;
    r.embeddings.assign(d->embeddings.begin(), d->embeddings.end());
    r.optimizer.assign(d->optimizer.begin(), d->optimizer.end());
  }
}

absl::Status Checkpointer::WriteCopied(const CopiedCheckpoint& copy) {
  const uint64_t version = write_version_;
  for (const CopiedCheckpoint::Rows& r : copy.partitions) {
    if (r.embeddings.empty()) continue;  // no id rows
    RETURN_IF_ERROR(graph_->WriteTable(Table::kEmbeddings, r.partition, version,
                                       r.embeddings.data(), r.rows,
                                       static_cast<uint32_t>(options_.model.dim)));
    RETURN_IF_ERROR(
        graph_->WriteTable(Table::kOptimizer, r.partition, version, r.optimizer.data(), r.rows, 1));
  }
  const std::vector<uint64_t> locations(copy.partitions.size(), version);
  return Commit(locations, copy.relations, nullptr, copy.epochs_done, 0, copy.epochs_done);
}

absl::Status Checkpointer::Commit(const std::vector<uint64_t>& locations,
                                  const RelationParams& relations, const FeatureTable* features,
                                  int epoch, uint64_t next_round, int epochs_done) {
  RETURN_IF_ERROR(WriteBlobs(relations, features));
  RETURN_IF_ERROR(graph_->SyncTables());
  return CommitRecord(locations, epoch, next_round, epochs_done);
}

absl::Status Checkpointer::WriteShare(std::span<const uint32_t> unsynced,
                                      const RelationParams& relations,
                                      const FeatureTable* features) {
  for (uint32_t p : unsynced) RETURN_IF_ERROR(graph_->SyncTables(p));
  return WriteBlobs(relations, features);
}

absl::Status Checkpointer::CommitShare(const std::vector<uint32_t>& partition_ranks,
                                       const std::vector<uint64_t>& locations,
                                       const std::vector<uint64_t>& in_use, uint32_t copy_rank,
                                       int epoch, uint64_t next_round, int epochs_done) {
  return CommitRecord(locations, epoch, next_round, epochs_done, partition_ranks, copy_rank,
                      in_use);
}

absl::Status Checkpointer::WriteBlobs(const RelationParams& relations,
                                      const FeatureTable* features) {
  const uint64_t version = write_version_;
  const auto finite = [](float x) { return std::isfinite(x); };
  if (!std::all_of(relations.params.begin(), relations.params.end(), finite)) {
    return absl::FailedPreconditionError(
        absl::StrCat(graph_->dir(),
                     ": the relation parameters hold a value that is not finite (the model "
                     "diverged); checkpoint ",
                     version, " is not written, the last one (", committed_version_,
                     ") is kept. Lower --lr, then run again"));
  }
  RETURN_IF_ERROR(graph_->WriteBlob(RelationBlobName(version), EncodeRelationBlob(relations)));
  if (features != nullptr) {
    std::array<uint32_t, 2> header;
    const auto parts = FeatureTableBlobParts(*features, &header);
    RETURN_IF_ERROR(graph_->WriteBlob(FeatureTableBlobName(version), parts));
  }
  return absl::OkStatus();
}

absl::Status Checkpointer::CommitRecord(const std::vector<uint64_t>& locations, int epoch,
                                        uint64_t next_round, int epochs_done,
                                        const std::vector<uint32_t>& partition_ranks,
                                        uint32_t copy_rank, const std::vector<uint64_t>& in_use) {
  const uint64_t version = write_version_;
  TrainState state;
  state.epochs_done = static_cast<uint32_t>(epochs_done);
  state.model = options_.model;
  state.partition_versions = locations;
  state.partition_ranks = partition_ranks;
  state.copy_rank = copy_rank;
  state.position.epoch = static_cast<uint32_t>(epoch);
  state.position.next_round = next_round;
  state.position.lr = options_.optimizer.lr;
  state.position.seed = options_.seed;
  state.position.bucket_order = std::string(BucketOrderName(options_.schedule.bucket_order));
  state.position.buffer_partitions = shape_.buffer_partitions;
  state.position.round_size = shape_.round_size;
  state.position.round_lookahead = shape_.round_lookahead;
  state.position.world_size = shape_.world_size;
  state.position.edge_weights = std::string(EdgeWeightModeName(options_.edge_weights));
  Manifest m = graph_->manifest();
  StoreTrainState(state, version, &m);
  // Only the training record changes: the round being prefetched meanwhile
  // reads the rest of the manifest (Graph::CommitTraining).
  RETURN_IF_ERROR(graph_->CommitTraining(m.training));
  // The new checkpoint is durable; drop what only the old one used.
  for (uint32_t p = 0; p < locations.size(); ++p) {
    const uint64_t old = committed_locations_[p];
    const bool used = !in_use.empty() && in_use[p] == old;
    if (old != 0 && old != locations[p] && !used) {
      RETURN_IF_ERROR(graph_->DeleteTableVersion(Table::kEmbeddings, p, old));
      RETURN_IF_ERROR(graph_->DeleteTableVersion(Table::kOptimizer, p, old));
    }
  }
  if (committed_version_ != 0 && committed_version_ != version) {
    RETURN_IF_ERROR(graph_->DeleteBlob(RelationBlobName(committed_version_)));
    // Absent (and ignored) when the old checkpoint was not featurized.
    RETURN_IF_ERROR(graph_->DeleteBlob(FeatureTableBlobName(committed_version_)));
  }
  committed_locations_ = locations;
  committed_version_ = write_version_;
  write_version_ = committed_version_ + 1;
  const bool more_follows = next_round > 0 || epochs_done < options_.epochs;
  return more_follows ? CheckSpace() : absl::OkStatus();
}

void Checkpointer::CountCommitted(PartitionBuffer* buffer) {
  committed_version_ = write_version_;
  write_version_ = committed_version_ + 1;
  buffer->set_write_version(write_version_);
}

}  // namespace ember
