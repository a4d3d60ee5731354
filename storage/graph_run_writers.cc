#include "storage/graph_run_writers.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/graph_builder.h"
#include "storage/internal/keys.h"
#include "storage/base/status_macros.h"

namespace ember {

NodeWriter::NodeWriter(std::vector<std::unique_ptr<SortedRunWriter>> nodes,
                       std::vector<std::unique_ptr<SortedRunWriter>> by_id,
                       std::unique_ptr<SortedRunWriter> by_name)
    : nodes_(std::move(nodes)), by_id_(std::move(by_id)), by_name_(std::move(by_name)) {}

NodeWriter::~NodeWriter() = default;

absl::Status NodeWriter::AddNode(uint64_t node_key, std::string_view name, NodeRef ref) {
  RETURN_IF_ERROR(status_);
  if (ref.partition >= nodes_.size()) {
    return status_ = absl::InvalidArgumentError(absl::StrCat(
               "node of partition ", ref.partition, ", but the graph has ",
               nodes_.size(), " partitions"));
  }
  const uint64_t packed = PackNodeRef(ref);
  status_ = nodes_[ref.partition]->Add(NodeOffsetKey(ref.offset), name);
  if (status_.ok()) status_ = by_name_->Add(DictNameKey(node_key, name), EncodeU64(packed));
  if (status_.ok()) status_ = by_id_[ref.partition]->Add(DictIdKey(packed), name);
  return status_;
}

absl::Status NodeWriter::Finish() {
  RETURN_IF_ERROR(status_);
  status_ = by_name_->Finish();
  for (size_t p = 0; p < nodes_.size() && status_.ok(); ++p) {
    status_ = nodes_[p]->Finish();
    if (status_.ok()) status_ = by_id_[p]->Finish();
  }
  return status_;
}

EdgeRunWriter::EdgeRunWriter(std::unique_ptr<SortedRunWriter> run, uint64_t seq_base)
    : run_(std::move(run)), seq_base_(seq_base) {}

EdgeRunWriter::~EdgeRunWriter() = default;

absl::Status EdgeRunWriter::AddEdges(Split split, uint32_t dst_partition,
                                     std::span<const Edge> edges) {
  return Add(split, dst_partition, edges, nullptr);
}

absl::Status EdgeRunWriter::AddWeightedEdges(Split split, uint32_t dst_partition,
                                             std::span<const Edge> edges,
                                             std::span<const float> weights) {
  EMBER_CHECK(weights.size() == edges.size());
  return Add(split, dst_partition, edges, weights.data());
}

absl::Status EdgeRunWriter::Add(Split split, uint32_t dst_partition, std::span<const Edge> edges,
                                const float* weights) {
  RETURN_IF_ERROR(status_);
  if (!started_ || split != split_ || dst_partition != dst_partition_) {
    started_ = true;
    split_ = split;
    dst_partition_ = dst_partition;
    next_block_ = 0;
  }
  for (size_t b = 0; b < edges.size(); b += kMaxEdgesPerBlock) {
    if (next_block_ > kMaxEdgeBlock) {
      return status_ = absl::ResourceExhaustedError(absl::StrCat(
                 "more than ", kMaxEdgeBlock + 1, " edge blocks of bucket (split ",
                 std::string(SplitName(split)), ", dst partition ", dst_partition, ") in one run"));
    }
    const size_t n = std::min<size_t>(kMaxEdgesPerBlock, edges.size() - b);
    status_ = run_->Add(
        EdgeBlockKey(split, dst_partition, seq_base_ | next_block_++),
        weights == nullptr
            ? EncodeEdgeBlock(edges.subspan(b, n))
            : EncodeEdgeBlock(edges.subspan(b, n), std::span<const float>(weights + b, n)));
    RETURN_IF_ERROR(status_);
  }
  return absl::OkStatus();
}

absl::Status EdgeRunWriter::Finish() {
  RETURN_IF_ERROR(status_);
  return status_ = run_->Finish();
}

FeatureRunWriter::FeatureRunWriter(std::unique_ptr<SortedRunWriter> run)
    : run_(std::move(run)) {}

FeatureRunWriter::~FeatureRunWriter() = default;

absl::Status FeatureRunWriter::AddFeatures(uint32_t offset,
                                           std::span<const FeatureEntry> entries) {
  return run_->Add(FeatureKey(offset), EncodeFeatureList(entries));
}

absl::Status FeatureRunWriter::Finish() { return run_->Finish(); }

}  // namespace ember
