#include "partition/feature_import.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "partition/line_parser.h"
#include "partition/line_reader.h"
#include "partition/node_slots.h"
#include "partition/record_file.h"
#include "storage/graph_builder.h"
#include "storage/base/node_hash.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

// The importer's slot file record (partition/importer.cc writes them).
struct PendingRow {
  uint32_t offset;
  uint32_t count;
  uint64_t start;  // into the partition's entry buffer
};

struct ParsedToken {
  std::string_view name;
  float weight;
};

class FeatureImporter {
 public:
  FeatureImporter(GraphBuilder* builder,
                  const std::vector<uint64_t>& partition_sizes,
                  const FeatureImportOptions& options)
      : builder_(builder),
        partition_sizes_(partition_sizes),
        options_(options),
        rows_(partition_sizes.size()),
        entries_(partition_sizes.size()) {}

  absl::StatusOr<FeatureImportSummary> Run(const std::string& slot_file);

 private:
  absl::Status LoadSlots(const std::string& slot_file);
  absl::Status ReadFile(const std::string& path);
  // Parses one data line; returns a bad-line message (with *reason set) or
  // "" when the line was accepted or skipped as an unknown node.
  absl::StatusOr<std::string> ParseLine(std::string_view line,
                                        FeatureRejectReason* reason);
  absl::Status Flush();

  GraphBuilder* builder_;
  const std::vector<uint64_t>& partition_sizes_;
  const FeatureImportOptions& options_;
  NodeSlotTable slots_;
  std::vector<uint64_t> base_;  // global id of each partition's offset 0
  std::vector<uint64_t> seen_;  // bit per global id: has a feature line
  absl::flat_hash_map<std::string, uint32_t> vocab_;
  std::string vocab_blob_;
  std::vector<std::vector<PendingRow>> rows_;
  std::vector<std::vector<FeatureEntry>> entries_;
  uint64_t buffered_bytes_ = 0;
  uint64_t buffer_limit_ = 0;
  std::vector<ParsedToken> tokens_;
  std::vector<FeatureEntry> line_entries_;
  FeatureImportSummary summary_;
};

absl::Status FeatureImporter::LoadSlots(const std::string& slot_file) {
  ASSIGN_OR_RETURN(auto reader, RecordReader::Open(slot_file));
  slots_.Reserve(reader->file_bytes() / sizeof(SlotRecord));
  std::vector<SlotRecord> buf(1 << 16);
  while (true) {
    ASSIGN_OR_RETURN(size_t got,
                     reader->Read(buf.data(), buf.size() * sizeof(SlotRecord)));
    if (got == 0) break;
    if (got % sizeof(SlotRecord) != 0) {
      return absl::DataLossError(absl::StrCat("truncated slot file ", slot_file));
    }
    for (size_t i = 0; i < got / sizeof(SlotRecord); ++i) {
      slots_.Append(buf[i].key, buf[i].slot);
    }
  }
  slots_.Seal();
  return absl::OkStatus();
}

absl::StatusOr<std::string> FeatureImporter::ParseLine(
    std::string_view line, FeatureRejectReason* reason) {
  // Node field: up to the first tab, or the first space without tabs.
  const size_t tab = line.find('\t');
  const size_t end = tab != std::string_view::npos ? tab : line.find(' ');
  std::string_view node = line.substr(0, end);
  std::string_view rest =
      end == std::string_view::npos ? std::string_view() : line.substr(end + 1);
  while (!node.empty() && node.front() == ' ') node.remove_prefix(1);
  while (!node.empty() && node.back() == ' ') node.remove_suffix(1);
  if (node.empty()) {
    *reason = FeatureRejectReason::kEmptyNode;
    return absl::StrCat("empty node in '", PrintableSnippet(line), "'");
  }
  uint64_t key;
  if (options_.integer_ids) {
    uint64_t id;
    auto [ptr, ec] = std::from_chars(node.data(), node.data() + node.size(), id);
    if (ec != std::errc() || ptr != node.data() + node.size()) {
      *reason = FeatureRejectReason::kBadNodeId;
      return absl::StrCat("node '", PrintableSnippet(node),
                          "' is not a non-negative 64-bit integer (--integer-ids)");
    }
    key = IntegerNodeKey(id);
  } else {
    RejectReason why;
    if (!ValidateStringId(node, &why)) {
      *reason = FeatureRejectReason::kInvalidNode;
      return absl::StrCat(why == RejectReason::kInvalidUtf8
                              ? "invalid UTF-8"
                              : "binary data (control byte)",
                          " in node of '", PrintableSnippet(line), "'");
    }
    key = StringNodeKey(node);
  }

  tokens_.clear();
  size_t i = 0;
  while (true) {
    while (i < rest.size() && (rest[i] == ' ' || rest[i] == '\t')) ++i;
    if (i >= rest.size()) break;
    size_t j = i;
    while (j < rest.size() && rest[j] != ' ' && rest[j] != '\t') ++j;
    std::string_view tok = rest.substr(i, j - i);
    i = j;
    ParsedToken t{tok, 1.0f};
    const size_t colon = tok.rfind(':');
    if (colon != std::string_view::npos) {
      t.name = tok.substr(0, colon);
      std::string_view w = tok.substr(colon + 1);
      if (!absl::SimpleAtof(absl::string_view(w.data(), w.size()), &t.weight)) {
        *reason = FeatureRejectReason::kBadWeight;
        return absl::StrCat("bad weight '", PrintableSnippet(w), "' of feature '",
                            PrintableSnippet(t.name), "' in '", PrintableSnippet(line), "'");
      }
      if (!std::isfinite(t.weight)) {
        *reason = FeatureRejectReason::kNonFiniteWeight;
        return absl::StrCat("non-finite weight '", PrintableSnippet(w),
                            "' of feature '", PrintableSnippet(t.name), "' in '",
                            PrintableSnippet(line), "'");
      }
    }
    RejectReason why;
    if (!ValidateStringId(t.name, &why)) {
      *reason = FeatureRejectReason::kBadFeature;
      return absl::StrCat(t.name.empty() ? "empty feature name"
                          : why == RejectReason::kInvalidUtf8
                              ? "invalid UTF-8 in a feature name"
                              : "binary data (control byte) in a feature name",
                          " in '", PrintableSnippet(line), "'");
    }
    tokens_.push_back(t);
  }

  const uint64_t* slot = slots_.Find(key);
  if (slot == nullptr) {
    ++summary_.unknown_nodes;
    return std::string();
  }
  const uint32_t p = SlotPartition(*slot);
  const uint32_t offset = SlotOffset(*slot);
  if (p >= partition_sizes_.size() || offset >= partition_sizes_[p]) {
    return absl::InternalError(absl::StrCat(
        "slot of node '", PrintableSnippet(node), "' is outside the graph"));
  }
  const uint64_t gid = base_[p] + offset;
  if (seen_[gid >> 6] & (uint64_t{1} << (gid & 63))) {
    *reason = FeatureRejectReason::kDuplicateNode;
    return absl::StrCat("node '", PrintableSnippet(node),
                        "' already has a feature line (each node may have "
                        "one) in '", PrintableSnippet(line), "'");
  }
  seen_[gid >> 6] |= uint64_t{1} << (gid & 63);

  line_entries_.clear();
  for (const ParsedToken& t : tokens_) {
    auto it = vocab_.find(absl::string_view(t.name.data(), t.name.size()));
    uint32_t id;
    if (it != vocab_.end()) {
      id = it->second;
    } else {
      if (vocab_.size() >= 0xffffffffu) {
        return absl::ResourceExhaustedError(
            "more than 2^32-1 distinct feature names");
      }
      id = static_cast<uint32_t>(vocab_.size());
      vocab_.emplace(std::string(t.name), id);
      vocab_blob_.append(t.name);
      vocab_blob_.push_back('\n');
    }
    line_entries_.push_back(FeatureEntry{id, t.weight});
  }
  std::sort(line_entries_.begin(), line_entries_.end(),
            [](const FeatureEntry& a, const FeatureEntry& b) {
              return a.feature < b.feature;
            });
  size_t n = 0;  // merge repeats, summing weights
  for (size_t k = 0; k < line_entries_.size(); ++k) {
    if (n > 0 && line_entries_[n - 1].feature == line_entries_[k].feature) {
      line_entries_[n - 1].weight += line_entries_[k].weight;
    } else {
      line_entries_[n++] = line_entries_[k];
    }
  }
  line_entries_.resize(n);

  ++summary_.nodes_with_features;
  summary_.nonzeros += n;
  if (n > 0) {
    rows_[p].push_back(PendingRow{offset, static_cast<uint32_t>(n),
                                  entries_[p].size()});
    entries_[p].insert(entries_[p].end(), line_entries_.begin(),
                       line_entries_.end());
    buffered_bytes_ += sizeof(PendingRow) + n * sizeof(FeatureEntry);
    if (buffered_bytes_ >= buffer_limit_) RETURN_IF_ERROR(Flush());
  }
  return std::string();
}

absl::Status FeatureImporter::ReadFile(const std::string& path) {
  ASSIGN_OR_RETURN(auto reader, LineReader::Open(path));
  LineChunk chunk;
  while (true) {
    ASSIGN_OR_RETURN(bool more, reader->Next(&chunk));
    if (!more) break;
    std::string_view text = chunk.text;
    uint64_t line_no = chunk.first_line;
    while (!text.empty()) {
      size_t nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
      const uint64_t this_line = line_no++;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (IsSkippableLine(line)) continue;
      ++summary_.lines;
      FeatureRejectReason reason = FeatureRejectReason::kCount;
      ASSIGN_OR_RETURN(std::string bad, ParseLine(line, &reason));
      if (bad.empty()) continue;
      if (!options_.skip_bad_lines) {
        return absl::InvalidArgumentError(
            absl::StrCat(InputName(path), ":", this_line, ": ", bad,
                         " (--skip-bad-lines counts and skips such lines)"));
      }
      ++summary_.rejected[static_cast<int>(reason)];
    }
  }
  return absl::OkStatus();
}

absl::Status FeatureImporter::Flush() {
  for (uint32_t p = 0; p < rows_.size(); ++p) {
    std::vector<PendingRow>& rows = rows_[p];
    if (rows.empty()) continue;
    std::sort(rows.begin(), rows.end(),
              [](const PendingRow& a, const PendingRow& b) {
                return a.offset < b.offset;
              });
    ASSIGN_OR_RETURN(auto run, builder_->NewFeatureRun(p));
    for (const PendingRow& r : rows) {
      RETURN_IF_ERROR(run->AddFeatures(
          r.offset, std::span<const FeatureEntry>(entries_[p].data() + r.start, r.count)));
    }
    RETURN_IF_ERROR(run->Finish());
    ++summary_.runs_written;
    rows.clear();
    entries_[p].clear();
  }
  buffered_bytes_ = 0;
  return absl::OkStatus();
}

absl::StatusOr<FeatureImportSummary> FeatureImporter::Run(
    const std::string& slot_file) {
  uint64_t total = 0;
  for (uint64_t s : partition_sizes_) {
    base_.push_back(total);
    total += s;
  }
  seen_.assign((total + 63) / 64, 0);
  RETURN_IF_ERROR(LoadSlots(slot_file));
  buffer_limit_ = options_.buffer_bytes > 0
                      ? options_.buffer_bytes
                      : std::max<uint64_t>(options_.memory_budget / 4, 1 << 20);
  for (const std::string& path : options_.files) RETURN_IF_ERROR(ReadFile(path));
  RETURN_IF_ERROR(Flush());
  RETURN_IF_ERROR(builder_->WriteFeatureVocabulary(vocab_blob_));
  summary_.vocab_size = vocab_.size();
  return summary_;
}

}  // namespace

std::string_view FeatureRejectReasonName(FeatureRejectReason reason) {
  switch (reason) {
    case FeatureRejectReason::kEmptyNode:
      return "empty_node";
    case FeatureRejectReason::kBadNodeId:
      return "bad_node_id";
    case FeatureRejectReason::kInvalidNode:
      return "invalid_node";
    case FeatureRejectReason::kBadFeature:
      return "bad_feature";
    case FeatureRejectReason::kBadWeight:
      return "bad_weight";
    case FeatureRejectReason::kNonFiniteWeight:
      return "non_finite_weight";
    case FeatureRejectReason::kDuplicateNode:
      return "duplicate_node";
    case FeatureRejectReason::kCount:
      break;
  }
  return "unknown";
}

absl::Status FeatureImportOptions::Validate() const {
  if (memory_budget == 0) {
    return absl::InvalidArgumentError("feature import: memory_budget must be positive");
  }
  return absl::OkStatus();
}

absl::StatusOr<FeatureImportSummary> ImportNodeFeatures(
    GraphBuilder* builder, const std::string& slot_file,
    const std::vector<uint64_t>& partition_sizes,
    const FeatureImportOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  FeatureImporter importer(builder, partition_sizes, options);
  return importer.Run(slot_file);
}

}  // namespace ember
