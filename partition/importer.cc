#include "partition/importer.h"

#include <algorithm>
#include <atomic>
#include <bit>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <limits>
#include <optional>
#include <type_traits>

#include <tbb/task_arena.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "partition/line_reader.h"
#include "partition/node_aggregator.h"
#include "partition/node_slots.h"
#include "partition/record_file.h"
#include "partition/schema.h"
#include "partition/train_memory.h"
#include "storage/base/file_system.h"
#include "storage/base/node_hash.h"
#include "storage/base/parallel.h"
#include "storage/base/status_macros.h"
#include "storage/graph.h"
#include "storage/graph_builder.h"

namespace ember {
namespace {

using Clock = std::chrono::steady_clock;

// A node occurrence's `where`: the input's index above this many bits, its
// line below.
constexpr int kWhereLineBits = 40;

// An edge between phases. Endpoints are node keys until translated, then
// PackSlot() values; flags say which.
struct EdgeRecord {
  uint64_t src;
  uint64_t dst;
  uint32_t rel;
  uint8_t split;
  uint8_t flags;
  uint16_t unused;
};
static_assert(sizeof(EdgeRecord) == 24);
enum : uint8_t { kSrcSlot = 1, kDstSlot = 2 };

struct InputFile {
  std::string path;
  std::optional<Split> split;  // fixed split, or by fractions
};

struct FileFormat {
  bool known = false;
  LineFormat line;
  uint64_t first_data_line = 0;  // 1-based; a header would be here
};

// One chunk of input lines travelling through the parse pipeline.
struct ParseToken {
  size_t file_index = 0;
  LineChunk lines;
  FileFormat format;
  bool skip_first_line = false;
  std::vector<EdgeRecord> edges;
  std::vector<float> weights;               // weighted imports: edges[i]'s weight
  std::vector<std::string_view> rel_names;  // local id -> name
  std::optional<std::pair<uint64_t, std::string>> bad_line;  // (line, why)
  std::array<uint64_t, kNumRejectReasons> rejected{};
  uint64_t self_loops = 0;
  uint64_t data_lines = 0;
  absl::Status status;
};

// A weighted import's record: the edge and its weight (ImportOptions::
// weight_column). Unweighted imports keep to the smaller EdgeRecord.
struct WeightedEdgeRecord {
  EdgeRecord edge;
  float weight;
  uint32_t unused;
};
static_assert(sizeof(WeightedEdgeRecord) == 32);
EdgeRecord& Base(EdgeRecord& r) { return r; }
EdgeRecord& Base(WeightedEdgeRecord& r) { return r.edge; }
const EdgeRecord& Base(const EdgeRecord& r) { return r; }
const EdgeRecord& Base(const WeightedEdgeRecord& r) { return r.edge; }

// Whether a field that is not a weight is a word (a column name such as
// "rating"), not a number nor one of strtof's nan and inf spellings.
bool IsWordNotNumber(std::string_view field) {
  std::string lower;
  for (char c : field)
    lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  for (std::string_view number :
       {"nan", "+nan", "-nan", "inf", "+inf", "-inf", "infinity", "+infinity", "-infinity"}) {
    if (lower == number) return false;
  }
  return std::any_of(lower.begin(), lower.end(), [](char c) { return c >= 'a' && c <= 'z'; });
}

// `weight_text`: the weight column's field, for the weight reasons.
std::string BadLineMessage(RejectReason reason, std::string_view line, const LineFormat& format,
                           std::string_view weight_text = {}) {
  const auto weight_is = [&](std::string_view what) {
    return absl::StrCat("weight '", PrintableSnippet(weight_text), "' (column ", format.weight_col,
                        ") ", std::string(what), " in '", PrintableSnippet(line), "'");
  };
  switch (reason) {
    case RejectReason::kBadWeight:
      return weight_is("is not a finite number");
    case RejectReason::kNegativeWeight:
      return weight_is("is negative; weights must be above 0");
    case RejectReason::kZeroWeight:
      return weight_is(
          "is 0; weights must be above 0 (drop such lines from the input, or pass "
          "--skip-bad-lines to count and skip them)");
    case RejectReason::kTooFewColumns:
      return absl::StrCat("too few columns: expected ", format.min_fields(),
                          ", got ", CountFields(line, format.delimiter),
                          format.rel_col >= 0 ? " (missing relation column?)" : "",
                          " in '", PrintableSnippet(line), "'");
    case RejectReason::kEmptyId:
      return absl::StrCat("empty id in '", PrintableSnippet(line), "'");
    case RejectReason::kNonNumericId:
      return absl::StrCat("non-numeric id under --integer-ids in '",
                          PrintableSnippet(line), "'");
    case RejectReason::kNegativeId:
      return absl::StrCat("negative id under --integer-ids in '",
                          PrintableSnippet(line), "'");
    case RejectReason::kIdOutOfRange:
      return absl::StrCat("id larger than 2^64-1 under --integer-ids in '",
                          PrintableSnippet(line), "'");
    case RejectReason::kBinaryData:
      return absl::StrCat("binary data (control byte) in '", PrintableSnippet(line),
                          "'");
    case RejectReason::kInvalidUtf8:
      return absl::StrCat("invalid UTF-8 in '", PrintableSnippet(line), "'");
    case RejectReason::kCount:
      break;
  }
  return "bad line";
}

// The importer's state across phases.
class Importer {
 public:
  explicit Importer(const ImportOptions& options)
      : options_(options), start_(Clock::now()) {}

  absl::StatusOr<ImportSummary> Run();

 private:
  absl::Status ReadAndParse();
  void ParseChunk(ParseToken* token) const;
  absl::Status AbsorbChunk(ParseToken* token);
  absl::Status DetectFormat(const LineChunk& chunk, const std::string& name, bool skip_first,
                            FileFormat* format);
  absl::Status ChoosePartitions();
  absl::Status AssignNodes();
  absl::Status OpenForAppend();
  absl::Status TranslateAndWriteEdges();
  absl::Status LoadSlotRange(RecordReader* reader, uint32_t range,
                             std::optional<SlotRecord>* pending);
  absl::Status Distribute(const std::string& in_path, const std::string& prefix, bool by_src,
                          bool translate_src) {
    return weighted()
               ? DistributeRecords<WeightedEdgeRecord>(in_path, prefix, by_src, translate_src)
               : DistributeRecords<EdgeRecord>(in_path, prefix, by_src, translate_src);
  }
  // Rec: EdgeRecord, or WeightedEdgeRecord in a weighted import.
  template <typename Rec>
  absl::Status DistributeRecords(const std::string& in_path, const std::string& prefix, bool by_src,
                                 bool translate_src);
  template <typename Rec>
  absl::Status EmitChunk(std::vector<Rec>* records);
  template <typename Rec>
  absl::Status ProcessSpill(const std::string& path, bool translate_src, bool whole_file_chunk);
  bool weighted() const { return options_.weight_column >= 0; }
  // Bytes of one spilled edge.
  size_t record_bytes() const {
    return weighted() ? sizeof(WeightedEdgeRecord) : sizeof(EdgeRecord);
  }
  uint32_t RangeOf(uint64_t key) const {
    return range_bits_ == 0 ? 0 : static_cast<uint32_t>(key >> (64 - range_bits_));
  }
  void Report(const std::string& phase, uint64_t done, uint64_t total,
              const std::string& unit);
  double Elapsed() const {
    return std::chrono::duration<double>(Clock::now() - start_).count();
  }
  std::string Scratch(std::string_view name) const {
    return absl::StrCat(builder_->scratch_dir(), "/", std::string(name));
  }

  // The node types: one per schema type, or one spanning every partition.
  bool typed() const { return !schema_.types.empty(); }
  uint32_t num_types() const { return typed() ? schema_.types.size() : 1; }
  // Lays the types' partitions out one after the other (type_first_) from
  // their counts (type_parts_); num_partitions_ is their sum.
  void LayOutTypes();
  absl::Status PlanTypes();

  const ImportOptions& options_;
  const Clock::time_point start_;
  GraphSchema schema_;                             // empty: untyped
  std::vector<uint32_t> type_first_, type_parts_;  // per type; a 0 count: auto
  std::unique_ptr<Graph> graph_;  // the graph being appended to
  std::unique_ptr<GraphBuilder> builder_;
  std::vector<InputFile> inputs_;
  uint64_t input_bytes_ = 0;
  uint64_t bytes_before_current_ = 0;
  std::optional<LineFormat> columns_;  // decided on the first data line

  std::unique_ptr<NodeAggregator> nodes_;
  std::unique_ptr<RecordWriter> edge_spill_;
  uint64_t num_records_ = 0;
  // Weighted imports: the weights of the edges read (ImportSummary).
  float weight_min_ = std::numeric_limits<float>::infinity();
  float weight_max_ = 0;
  double weight_sum_ = 0;
  absl::flat_hash_map<std::string, uint32_t> relation_ids_;
  std::vector<std::string> relations_;

  uint32_t num_partitions_ = 1;
  std::vector<uint64_t> partition_sizes_;
  uint64_t num_nodes_ = 0;
  DegreeStats degree_;
  int range_bits_ = 0;
  NodeSlotTable slots_;
  uint64_t chunk_id_ = 0;  // names Distribute's spill files
  uint64_t chunk_edges_ = 1 << 20;
  std::vector<std::string> warnings_;  // ImportSummary::warnings
  uint64_t edges_translated_ = 0;
  std::vector<uint64_t> train_bucket_edges_;
  ImportSummary summary_;
};

absl::Status Importer::DetectFormat(const LineChunk& chunk, const std::string& name,
                                    bool skip_first, FileFormat* format) {
  const std::string_view text = chunk.text;
  size_t pos = 0;
  uint64_t line_no = chunk.first_line;
  for (; pos < text.size(); ++line_no) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line_no == 1 && skip_first) continue;
    if (IsSkippableLine(line)) continue;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    LineFormat f;
    f.integer_ids = options_.integer_ids;
    f.delimiter = options_.delimiter != '\0' ? options_.delimiter
                                             : DetectDelimiter(line);
    const int fields = CountFields(line, f.delimiter);
    const int weight_col = options_.weight_column;
    // Without --columns the id columns are the fields other than the weight.
    const int id_fields = fields - (weight_col >= 0 && weight_col < fields ? 1 : 0);
    if (options_.columns.empty() && id_fields > 3) {
      return absl::InvalidArgumentError(absl::StrCat(
          name, ":", line_no, ": ", fields, " columns in '", PrintableSnippet(line),
          "': without --columns ember reads 2 columns as SRC DST and 3 as SRC REL DST",
          weight_col >= 0 ? " (besides the --weight-column)" : "",
          "; say which columns hold the ids with --columns SRC,DST or SRC,REL,DST (0-based; "
          "e.g. --columns 0,1 --weight-column 2 for `user item rating timestamp` lines)"));
    }
    if (!columns_.has_value()) {
      LineFormat cols;
      if (options_.columns.size() == 2) {
        cols.src_col = options_.columns[0];
        cols.dst_col = options_.columns[1];
      } else if (options_.columns.size() == 3) {
        cols.src_col = options_.columns[0];
        cols.rel_col = options_.columns[1];
        cols.dst_col = options_.columns[2];
      } else {
        // The first 2 or 3 fields that are not the weight's.
        std::vector<int> order;
        for (int c = 0; static_cast<int>(order.size()) < 3; ++c) {
          if (c != weight_col) order.push_back(c);
        }
        cols.src_col = order[0];
        if (id_fields >= 3) {
          cols.rel_col = order[1];
          cols.dst_col = order[2];
        } else {
          cols.dst_col = order[1];
        }
      }
      cols.weight_col = weight_col;
      columns_ = cols;
    }
    f.src_col = columns_->src_col;
    f.rel_col = columns_->rel_col;
    f.dst_col = columns_->dst_col;
    f.weight_col = columns_->weight_col;
    format->line = f;
    format->known = true;
    format->first_data_line = line_no;
    if (!skip_first && !f.integer_ids && LooksLikeHeader(line, f)) {
      warnings_.push_back(absl::StrCat(
          name, ":", line_no, ": '", PrintableSnippet(line),
          "' looks like a header and was imported as an edge: pass --header to skip each "
          "file's first line"));
    }
    return absl::OkStatus();
  }
  return absl::OkStatus();
}

void Importer::ParseChunk(ParseToken* t) const {
  const std::string& text = t->lines.text;
  const LineFormat& format = t->format.line;
  const bool has_rel = format.rel_col >= 0;
  absl::flat_hash_map<std::string_view, uint32_t> local_rels;
  std::vector<RelationTypes> local_types;  // by local relation id (typed graphs)
  RelationTypes types;                     // of the line's relation
  if (typed() && !has_rel) {
    const GraphSchema::Relation* entry = schema_.Find("");
    if (entry == nullptr) {
      t->status = absl::InvalidArgumentError(absl::StrCat(
          InputName(inputs_[t->file_index].path),
          ": lines without a relation column need a schema entry SOURCE_TYPE:DESTINATION_TYPE "
          "(or a line `",
          std::string(kDefaultRelation),
          "<TAB>source type<TAB>destination type` in a schema "
          "file)"));
      return;
    }
    types = entry->types;
  }
  const uint64_t file_where = uint64_t{t->file_index} << kWhereLineBits;
  std::vector<NodeOccurrence> occurrences;
  t->edges.reserve(t->lines.num_lines);
  occurrences.reserve(2 * t->lines.num_lines);
  const std::optional<Split> fixed = inputs_[t->file_index].split;
  size_t pos = 0;
  uint64_t line_no = t->lines.first_line;
  for (; pos < text.size(); ++line_no) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line_no == 1 && t->skip_first_line) continue;
    if (IsSkippableLine(line)) continue;
    ++t->data_lines;
    ParsedLine parsed;
    RejectReason reason;
    if (!t->format.known || !ParseEdgeLine(line, format, &parsed, &reason)) {
      if (!t->format.known) reason = RejectReason::kTooFewColumns;
      ++t->rejected[static_cast<int>(reason)];
      if (!options_.skip_bad_lines) {
        std::string why = BadLineMessage(reason, line, format, parsed.weight_text);
        if (line_no == t->format.first_data_line && !t->skip_first_line &&
            (reason == RejectReason::kNonNumericId ||
             (reason == RejectReason::kBadWeight && IsWordNotNumber(parsed.weight_text)))) {
          absl::StrAppend(&why, " (line ", line_no,
                          " looks like a header: pass --header to skip each file's first line)");
        }
        t->bad_line.emplace(line_no, std::move(why));
        break;
      }
      continue;
    }
    uint64_t src_key, dst_key;
    if (format.integer_ids) {
      if (parsed.src_id == parsed.dst_id && options_.drop_self_loops) {
        ++t->self_loops;
        continue;
      }
      src_key = IntegerNodeKey(parsed.src_id);
      dst_key = IntegerNodeKey(parsed.dst_id);
    } else {
      if (parsed.src == parsed.dst && options_.drop_self_loops) {
        ++t->self_loops;
        continue;
      }
      src_key = StringNodeKey(parsed.src);
      dst_key = StringNodeKey(parsed.dst);
    }
    uint32_t rel = 0;
    uint64_t rel_key = 0;
    if (has_rel) {
      auto [it, inserted] = local_rels.try_emplace(parsed.rel, t->rel_names.size());
      if (inserted) {
        t->rel_names.push_back(parsed.rel);
        if (typed()) {
          const GraphSchema::Relation* entry = schema_.Find(parsed.rel);
          if (entry == nullptr) {
            t->status = absl::InvalidArgumentError(absl::StrCat(
                InputName(inputs_[t->file_index].path), ":", line_no, ": relation '",
                std::string(parsed.rel),
                "' is not in the schema; declare its source and "
                "destination types (a line relation<TAB>source type<TAB>destination type)"));
            return;
          }
          local_types.push_back(entry->types);
        }
      }
      rel = it->second;
      rel_key = StringNodeKey(parsed.rel);
      if (typed()) types = local_types[rel];
    }
    Split split = fixed.has_value()
                      ? *fixed
                      : SplitOfEdge(options_.split, options_.seed, src_key,
                                    rel_key, dst_key);
    t->edges.push_back(EdgeRecord{src_key, dst_key, rel,
                                  static_cast<uint8_t>(split), 0, 0});
    if (format.weight_col >= 0) t->weights.push_back(parsed.weight);
    const bool train = split == Split::kTrain;
    const uint64_t where = file_where | line_no;
    occurrences.push_back({src_key, parsed.src, train, static_cast<uint16_t>(types.src), where});
    occurrences.push_back({dst_key, parsed.dst, train, static_cast<uint16_t>(types.dst), where});
  }
  t->status = nodes_->Add(occurrences);
}

absl::Status Importer::AbsorbChunk(ParseToken* t) {
  const std::string path = InputName(inputs_[t->file_index].path);
  if (t->bad_line.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", t->bad_line->first, ": ", t->bad_line->second));
  }
  RETURN_IF_ERROR(t->status);
  if (!t->rel_names.empty() || t->format.line.rel_col < 0) {
    std::vector<uint32_t> remap(t->rel_names.size());
    for (size_t i = 0; i < t->rel_names.size(); ++i) {
      auto [it, inserted] = relation_ids_.try_emplace(
          std::string(t->rel_names[i]), relations_.size());
      if (inserted) relations_.emplace_back(t->rel_names[i]);
      remap[i] = it->second;
    }
    if (t->format.line.rel_col >= 0) {
      for (EdgeRecord& e : t->edges) e.rel = remap[e.rel];
    }
  }
  if (weighted()) {
    EMBER_CHECK(t->weights.size() == t->edges.size());
    std::vector<WeightedEdgeRecord> records(t->edges.size());
    for (size_t i = 0; i < records.size(); ++i) {
      const float w = t->weights[i];
      records[i] = WeightedEdgeRecord{t->edges[i], w, 0};
      weight_min_ = std::min(weight_min_, w);
      weight_max_ = std::max(weight_max_, w);
      weight_sum_ += w;
    }
    RETURN_IF_ERROR(
        edge_spill_->Append(records.data(), records.size() * sizeof(WeightedEdgeRecord)));
  } else {
    RETURN_IF_ERROR(edge_spill_->Append(t->edges.data(), t->edges.size() * sizeof(EdgeRecord)));
  }
  num_records_ += t->edges.size();
  summary_.lines += t->data_lines;
  summary_.self_loops_dropped += t->self_loops;
  for (int i = 0; i < kNumRejectReasons; ++i) summary_.rejected[i] += t->rejected[i];
  return absl::OkStatus();
}

absl::Status Importer::ReadAndParse() {
  NodeAggregatorOptions agg;
  agg.integer_ids = options_.integer_ids;
  agg.spill_dir = builder_->scratch_dir();
  agg.describe_where = [this](uint64_t where) {
    return absl::StrCat(InputName(inputs_[where >> kWhereLineBits].path), ":",
                        where & ((uint64_t{1} << kWhereLineBits) - 1));
  };
  agg.type_name = [this](uint16_t type) { return schema_.types[type]; };
  // Parse tokens and RocksDB take ~256 MiB; the node shards get most of the
  // rest while this phase runs.
  agg.memory_bytes = std::max<uint64_t>(
      64ull << 20, (options_.memory_budget - std::min<uint64_t>(
                                                 options_.memory_budget / 2, 256ull << 20)) * 3 / 4);
  ASSIGN_OR_RETURN(nodes_, NodeAggregator::Make(agg));
  ASSIGN_OR_RETURN(edge_spill_, RecordWriter::Create(Scratch("edges.spill")));

  absl::Status status;
  std::atomic<bool> failed{false};
  size_t file_index = 0;
  std::unique_ptr<LineReader> reader;
  FileFormat format;
  const int threads = options_.threads > 0 ? options_.threads
                                           : tbb::this_task_arena::max_concurrency();
  const size_t chunk_bytes = std::clamp<uint64_t>(options_.memory_budget / 64,
                                                  256 << 10, 4 << 20);
  auto fail = [&](absl::Status s) {
    if (!failed.exchange(true)) status = std::move(s);
  };
  ParallelPipeline(
      2 * threads + 1,
      MakeStage<void, ParseToken*>(
          StageMode::kSerialInOrder,
          [&](FlowControl& fc) -> ParseToken* {
            while (!failed.load()) {
              if (reader == nullptr) {
                if (file_index == inputs_.size()) break;
                auto r = LineReader::Open(inputs_[file_index].path, chunk_bytes);
                if (!r.ok()) {
                  fail(r.status());
                  break;
                }
                reader = std::move(r).value();
                format = FileFormat();
              }
              auto token = std::make_unique<ParseToken>();
              token->file_index = file_index;
              auto more = reader->Next(&token->lines);
              if (!more.ok()) {
                fail(more.status());
                break;
              }
              if (!*more) {
                bytes_before_current_ += reader->file_bytes();
                reader.reset();
                ++file_index;
                continue;
              }
              token->skip_first_line = options_.header;
              if (!format.known) {
                absl::Status s = DetectFormat(token->lines, InputName(inputs_[file_index].path),
                                              options_.header, &format);
                if (!s.ok()) {
                  fail(s);
                  break;
                }
              }
              token->format = format;
              Report("read", bytes_before_current_ + reader->bytes_read(),
                     input_bytes_, "bytes");
              return token.release();
            }
            fc.stop();
            return nullptr;
          }) &
          MakeStage<ParseToken*, ParseToken*>(
              StageMode::kParallel,
              [&](ParseToken* t) {
                if (!failed.load()) ParseChunk(t);
                return t;
              }) &
          MakeStage<ParseToken*, void>(
              StageMode::kSerialInOrder, [&](ParseToken* t) {
                std::unique_ptr<ParseToken> owned(t);
                if (failed.load()) return;
                absl::Status s = AbsorbChunk(t);
                if (!s.ok()) fail(std::move(s));
              }));
  RETURN_IF_ERROR(status);
  RETURN_IF_ERROR(edge_spill_->Close());
  if (relations_.empty()) relations_.push_back("default");
  // A relation the schema declares and no edge uses stays in the graph, at
  // the end of the relation ids: its types have their partitions already, a
  // later --append may bring its edges (an appended graph keeps the schema
  // its manifest records, so a dropped relation could never come back),
  // and `inspect` shows the schema as written. The warning names it, since
  // a schema that does not match the data is more often a slip.
  if (typed() && !options_.append) {
    for (const GraphSchema::Relation& r : schema_.relations) {
      if (std::find(relations_.begin(), relations_.end(), r.name) != relations_.end()) continue;
      relation_ids_.emplace(r.name, relations_.size());
      relations_.push_back(r.name);
      warnings_.push_back(absl::StrCat("relation '", r.name, "' of the schema (",
                                       schema_.types[r.types.src], " -> ",
                                       schema_.types[r.types.dst],
                                       ") has no edge in the input; it is kept in the graph "
                                       "without edges"));
    }
  }
  summary_.node_runs_spilled = nodes_->runs_spilled();
  if (num_records_ == 0) {
    return absl::InvalidArgumentError(
        "no edges in the input (only comments, blank or rejected lines)");
  }
  return absl::OkStatus();
}

// P for `--partitions auto`, from the distinct node count. Partitions are
// assigned while the merged nodes stream by, so the count comes first: free
// when no node shard spilled, one key-only read of the node runs otherwise.
// With types, the partition size auto chooses for all the nodes is every
// type's: a type gets as many partitions as its nodes fill (at least one),
// so a small type (items, tags) stays one resident partition while a large
// one is cut to fit the budget.
absl::Status Importer::ChoosePartitions() {
  const Clock::time_point start = Clock::now();
  Report("count nodes", 0, 0, "nodes");
  ASSIGN_OR_RETURN(std::vector<uint64_t> by_type, nodes_->CountDistinctByType());
  by_type.resize(num_types(), 0);
  uint64_t nodes = 0;
  for (uint64_t n : by_type) nodes += n;
  summary_.node_count_seconds =
      std::chrono::duration<double>(Clock::now() - start).count();
  const uint32_t all = AutoPartitions(nodes, options_.auto_dim, options_.memory_budget);
  const uint64_t rows = std::max<uint64_t>(1, (nodes + all - 1) / all);
  for (uint32_t t = 0; t < num_types(); ++t) {
    if (type_parts_[t] != 0) continue;
    type_parts_[t] =
        typed() ? static_cast<uint32_t>(std::max<uint64_t>(1, (by_type[t] + rows - 1) / rows))
                : all;
  }
  LayOutTypes();
  if (num_partitions_ > kMaxAutoPartitions) {
    return absl::InvalidArgumentError(
        absl::StrCat("the types need ", num_partitions_, " partitions in all, more than ",
                     kMaxAutoPartitions, "; raise --memory-budget or give --type-partitions"));
  }
  summary_.partitions_auto = PartitionsAuto{static_cast<uint32_t>(options_.auto_dim),
                                            options_.memory_budget};
  return builder_->SetNumPartitions(num_partitions_);
}

void Importer::LayOutTypes() {
  type_first_.assign(type_parts_.size(), 0);
  num_partitions_ = 0;
  for (size_t t = 0; t < type_parts_.size(); ++t) {
    type_first_[t] = num_partitions_;
    num_partitions_ += type_parts_[t];
  }
}

// The partition count of each type, from --type-partitions (by name), else
// --partitions (0: auto, chosen once the nodes are counted).
absl::Status Importer::PlanTypes() {
  type_parts_.assign(num_types(), options_.num_partitions);
  for (const auto& [name, count] : options_.type_partitions) {
    if (!typed()) {
      return absl::InvalidArgumentError("--type-partitions needs a --schema that names types");
    }
    auto it = std::find(schema_.types.begin(), schema_.types.end(), name);
    if (it == schema_.types.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--type-partitions names type '", name,
          "', which the schema does not (its types: ", absl::StrJoin(schema_.types, ", "), ")"));
    }
    type_parts_[it - schema_.types.begin()] = count;
  }
  LayOutTypes();
  if (num_partitions_ > kMaxAutoPartitions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "the types have ", num_partitions_, " partitions in all, more than ", kMaxAutoPartitions));
  }
  return absl::OkStatus();
}

absl::Status Importer::AssignNodes() {
  ASSIGN_OR_RETURN(auto node_writer, builder_->NewNodeWriter());
  ASSIGN_OR_RETURN(auto slot_writer, RecordWriter::Create(Scratch("slots")));
  if (graph_ == nullptr) partition_sizes_.assign(num_partitions_, 0);
  // One degree balancer per type, over that type's partitions.
  std::vector<std::optional<DegreeBalancer>> balancers(num_types());
  if (options_.partitioner == PartitionerKind::kDegree && graph_ == nullptr) {
    for (uint32_t t = 0; t < num_types(); ++t) balancers[t].emplace(type_parts_[t]);
  }
  summary_.types.assign(num_types(), ImportSummary::TypeCount{});
  // Degrees below kExactDegrees counted one by one (exact percentiles),
  // larger ones by their power of two.
  constexpr uint64_t kExactDegrees = uint64_t{1} << 16;
  std::vector<uint64_t> exact(kExactDegrees, 0);
  std::array<uint64_t, 65> histogram{};
  uint64_t min_degree = UINT64_MAX, max_degree = 0, degree_sum = 0;
  char digits[24];
  RETURN_IF_ERROR(nodes_->ForEachMerged([&](const MergedNode& n) -> absl::Status {
    std::string_view name = n.name;
    if (options_.integer_ids) {
      auto [end, ec] = std::to_chars(digits, digits + sizeof(digits),
                                     IntegerFromNodeKey(n.key));
      name = std::string_view(digits, end - digits);
    }
    ++num_nodes_;
    const uint32_t type = n.type;
    ++summary_.types[type].nodes;
    if (graph_ != nullptr) {
      // Existing nodes keep their place; only new ones are written.
      absl::StatusOr<NodeRef> existing = graph_->LookupNode(name);
      if (existing.ok()) {
        const uint32_t had = graph_->manifest().TypeOfPartition(existing->partition);
        if (typed() && had != type) {
          return absl::InvalidArgumentError(absl::StrCat(
              InputName(inputs_[n.where >> kWhereLineBits].path), ":",
              n.where & ((uint64_t{1} << kWhereLineBits) - 1), ": node '", std::string(name),
              "' is of type ", schema_.types[type],
              " here (by the schema), but the graph holds it as type ", schema_.types[had]));
        }
        SlotRecord rec{n.key, PackSlot(existing->partition, existing->offset, true)};
        return slot_writer->Append(&rec, sizeof(rec));
      }
      if (!absl::IsNotFound(existing.status())) return existing.status();
      ++summary_.new_nodes;
    }
    const uint32_t p =
        type_first_[type] + (balancers[type] ? balancers[type]->Assign(n.degree)
                                             : HashPartition(n.key, type_parts_[type]));
    const uint64_t offset = partition_sizes_[p]++;
    if (offset > kMaxPartitionNodes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "partition ", p, " has more than ", kMaxPartitionNodes,
          " nodes; import with more --partitions"));
    }
    SlotRecord rec{n.key, PackSlot(p, offset, n.in_train || graph_ != nullptr)};
    RETURN_IF_ERROR(slot_writer->Append(&rec, sizeof(rec)));
    RETURN_IF_ERROR(node_writer->AddNode(n.key, name, {p, static_cast<uint32_t>(offset)}));
    if (n.degree < kExactDegrees) {
      ++exact[n.degree];
    } else {
      ++histogram[std::bit_width(n.degree)];
    }
    min_degree = std::min(min_degree, n.degree);
    max_degree = std::max(max_degree, n.degree);
    degree_sum += n.degree;
    if (num_nodes_ % (1 << 20) == 0) Report("nodes", num_nodes_, 0, "nodes");
    return absl::OkStatus();
  }));
  nodes_.reset();
  RETURN_IF_ERROR(slot_writer->Close());
  RETURN_IF_ERROR(node_writer->Finish());
  if (graph_ != nullptr) return absl::OkStatus();  // degree stats: initial import's
  degree_.min = num_nodes_ ? min_degree : 0;
  degree_.max = max_degree;
  degree_.mean = num_nodes_ ? static_cast<double>(degree_sum) / num_nodes_ : 0;
  auto percentile = [&](double q) -> uint64_t {
    uint64_t target = static_cast<uint64_t>(std::ceil(q * num_nodes_)), seen = 0;
    for (uint64_t d = 0; d < kExactDegrees; ++d) {
      seen += exact[d];
      if (seen >= target && exact[d] > 0) return d;
    }
    for (int b = 0; b < 65; ++b) {
      seen += histogram[b];
      if (seen >= target && histogram[b] > 0) return uint64_t{1} << (b - 1);
    }
    return max_degree;
  };
  degree_.p50 = percentile(0.5);
  degree_.p90 = percentile(0.9);
  degree_.p99 = percentile(0.99);
  return absl::OkStatus();
}

absl::Status Importer::OpenForAppend() {
  GraphOpenOptions open;
  open.read_only = false;
  ASSIGN_OR_RETURN(graph_, Graph::Open(options_.out, open));
  RETURN_IF_ERROR(graph_->RemoveUncommittedAppend());
  const Manifest& m = graph_->manifest();
  if (m.integer_ids != options_.integer_ids) {
    return absl::InvalidArgumentError(absl::StrCat(
        options_.out, " was imported ", m.integer_ids ? "with" : "without",
        " --integer-ids; append with the same setting"));
  }
  if (m.edge_weights) {
    return absl::UnimplementedError(
        absl::StrCat(options_.out,
                     " is a weighted graph (imported with --weight-column); --append does not "
                     "support weighted graphs yet: import the graph again with all its edges"));
  }
  num_partitions_ = m.num_partitions;
  partition_sizes_ = m.partition_sizes;
  schema_ = SchemaOf(m);
  type_first_.clear();
  type_parts_.clear();
  for (uint32_t t = 0; t < num_types(); ++t) {
    type_first_.push_back(m.FirstPartitionOf(t));
    type_parts_.push_back(m.PartitionsOf(t));
  }
  for (const std::string& r : m.relations) {
    relation_ids_.emplace(r, relations_.size());
    relations_.push_back(r);
  }
  return absl::OkStatus();
}

absl::Status Importer::LoadSlotRange(RecordReader* reader, uint32_t range,
                                     std::optional<SlotRecord>* pending) {
  slots_.Clear();
  while (true) {
    if (!pending->has_value()) {
      SlotRecord rec;
      ASSIGN_OR_RETURN(size_t got, reader->Read(&rec, sizeof(rec)));
      if (got == 0) break;
      if (got != sizeof(rec)) return absl::DataLossError("truncated slot file");
      *pending = rec;
    }
    if (RangeOf((*pending)->key) != range) break;
    slots_.Append((*pending)->key, (*pending)->slot);
    pending->reset();
  }
  slots_.Seal();
  return absl::OkStatus();
}

// Reads edge records from `in_path`, translates the src endpoint with the
// loaded slot range when `translate_src`, and appends each record to
// `prefix-<r>` where r is the key range of its src (by_src) or dst endpoint.
template <typename Rec>
absl::Status Importer::DistributeRecords(const std::string& in_path, const std::string& prefix,
                                         bool by_src, bool translate_src) {
  const uint32_t ranges = 1u << range_bits_;
  ASSIGN_OR_RETURN(auto reader, RecordReader::Open(in_path));
  std::vector<std::unique_ptr<RecordWriter>> outs(ranges);
  for (uint32_t r = 0; r < ranges; ++r) {
    const std::string path = absl::StrCat(prefix, "-", r);
    // Append mode: each source range adds to the same destination files.
    auto w = RecordWriter::Create(path + ".part" + std::to_string(chunk_id_),
                                  std::max<size_t>(64 << 10, (64 << 20) / ranges));
    if (!w.ok()) return w.status();
    outs[r] = std::move(w).value();
  }
  ++chunk_id_;
  std::vector<Rec> buf(1 << 16);
  while (true) {
    ASSIGN_OR_RETURN(size_t got, reader->Read(buf.data(), buf.size() * sizeof(Rec)));
    if (got % sizeof(Rec) != 0) return absl::DataLossError("truncated edge spill");
    const size_t n = got / sizeof(Rec);
    if (n == 0) break;
    for (size_t i = 0; i < n; ++i) {
      EdgeRecord& e = Base(buf[i]);
      if (translate_src) {
        const uint64_t* slot = slots_.Find(e.src);
        if (slot == nullptr) return absl::InternalError("edge endpoint missing from node table");
        e.src = *slot;
        e.flags |= kSrcSlot;
      }
      const uint32_t r = RangeOf(by_src ? e.src : e.dst);
      RETURN_IF_ERROR(outs[r]->Append(&buf[i], sizeof(Rec)));
    }
  }
  for (auto& w : outs) RETURN_IF_ERROR(w->Close());
  return absl::OkStatus();
}

template <typename Rec>
absl::Status Importer::EmitChunk(std::vector<Rec>* records) {
  constexpr bool kWeighted = std::is_same_v<Rec, WeightedEdgeRecord>;
  const uint32_t P = num_partitions_;
  const uint64_t groups = uint64_t{3} * P * P;
  std::vector<uint64_t> start(groups + 1, 0);
  auto group_of = [P](const EdgeRecord& e) {
    return (uint64_t{SlotPartition(e.src)} * 3 + e.split) * P + SlotPartition(e.dst);
  };
  for (Rec& rec : *records) {
    EdgeRecord& e = Base(rec);
    if (!options_.inductive && e.split != static_cast<uint8_t>(Split::kTrain) &&
        !(SlotInTrain(e.src) && SlotInTrain(e.dst))) {
      e.split = static_cast<uint8_t>(Split::kTrain);
      ++summary_.moved_to_train;
    }
    ++start[group_of(e) + 1];
  }
  for (uint64_t g = 0; g < groups; ++g) start[g + 1] += start[g];
  std::vector<Edge> edges(records->size());
  std::vector<float> weights(kWeighted ? records->size() : 0);
  {
    std::vector<uint64_t> pos(start.begin(), start.end() - 1);
    for (const Rec& rec : *records) {
      const EdgeRecord& e = Base(rec);
      const uint64_t at = pos[group_of(e)]++;
      edges[at] = Edge{SlotOffset(e.src), e.rel, SlotOffset(e.dst)};
      if constexpr (kWeighted) weights[at] = rec.weight;
    }
  }
  std::vector<uint64_t> end(start.begin() + 1, start.end());
  if (options_.dedupe) {
    ParallelFor(0, groups, [&](uint64_t g) {
      auto first = edges.begin() + start[g], last = edges.begin() + end[g];
      std::sort(first, last);
      end[g] = std::unique(first, last) - edges.begin();
    });
  }
  for (uint32_t ps = 0; ps < P; ++ps) {
    for (int s = 0; s < kNumSplits; ++s) {
      for (uint32_t pd = 0; pd < P; ++pd) {
        const uint64_t g = (uint64_t{ps} * 3 + s) * P + pd;
        const uint64_t kept = end[g] - start[g];
        summary_.duplicates_dropped += start[g + 1] - start[g] - kept;
        summary_.edges[static_cast<Split>(s)] += kept;
        if (s == 0) train_bucket_edges_[uint64_t{ps} * P + pd] += kept;
      }
    }
  }
  std::vector<absl::Status> statuses(P);
  ParallelFor(0, P, [&](uint32_t ps) {
    statuses[ps] = [&]() -> absl::Status {
      ASSIGN_OR_RETURN(auto run, builder_->NewEdgeRun(ps));
      for (int s = 0; s < kNumSplits; ++s) {
        for (uint32_t pd = 0; pd < P; ++pd) {
          const uint64_t g = (uint64_t{ps} * 3 + s) * P + pd;
          const std::span<const Edge> bucket(edges.data() + start[g], end[g] - start[g]);
          if constexpr (kWeighted) {
            // No dedupe with weights (ImportOptions::Validate): end == start + count.
            RETURN_IF_ERROR(run->AddWeightedEdges(
                static_cast<Split>(s), pd, bucket,
                std::span<const float>(weights.data() + start[g], bucket.size())));
          } else {
            RETURN_IF_ERROR(run->AddEdges(static_cast<Split>(s), pd, bucket));
          }
        }
      }
      return run->Finish();
    }();
  });
  for (const absl::Status& s : statuses) RETURN_IF_ERROR(s);
  edges_translated_ += records->size();
  Report("edges", edges_translated_, num_records_, "edges");
  return absl::OkStatus();
}

// Translates the endpoints of the spilled records at `path` (the src too when
// `translate_src`) with the loaded slot range and emits them, in chunks of
// chunk_edges_ records or all at once (`whole_file_chunk`).
template <typename Rec>
absl::Status Importer::ProcessSpill(const std::string& path, bool translate_src,
                                    bool whole_file_chunk) {
  ASSIGN_OR_RETURN(auto reader, RecordReader::Open(path));
  const uint64_t total = reader->file_bytes() / sizeof(Rec);
  uint64_t done = 0;
  const uint64_t per_chunk = whole_file_chunk ? std::max<uint64_t>(total, 1) : chunk_edges_;
  std::vector<Rec> records;
  while (done < total) {
    const uint64_t n = std::min(per_chunk, total - done);
    records.resize(n);
    RETURN_IF_ERROR(reader->ReadExactly(records.data(), n * sizeof(Rec)));
    std::atomic<bool> missing{false};
    ParallelForRanges(0, n, 1 << 14, [&](size_t begin, size_t end) {
      for (uint64_t i = begin; i < end; ++i) {
        EdgeRecord& e = Base(records[i]);
        if (translate_src) {
          const uint64_t* s = slots_.Find(e.src);
          if (s == nullptr) {
            missing = true;
            continue;
          }
          e.src = *s;
        }
        const uint64_t* d = slots_.Find(e.dst);
        if (d == nullptr) {
          missing = true;
          continue;
        }
        e.dst = *d;
      }
    });
    if (missing) return absl::InternalError("edge endpoint missing from node table");
    RETURN_IF_ERROR(EmitChunk(&records));
    done += n;
  }
  return absl::OkStatus();
}

absl::Status Importer::TranslateAndWriteEdges() {
  train_bucket_edges_.assign(uint64_t{num_partitions_} * num_partitions_, 0);
  // Memory plan: the slot table (or one key range of it) and one chunk of
  // edge records being grouped.
  const uint64_t budget = options_.memory_budget;
  const uint64_t slot_bytes = num_nodes_ * NodeSlotTable::kBytesPerNode;
  const uint64_t chunk_bytes = std::max<uint64_t>(budget * 3 / 10, 16 << 20);
  chunk_edges_ = std::max<uint64_t>(
      chunk_bytes / (record_bytes() + sizeof(Edge) + (weighted() ? sizeof(float) : 0) + 8),
      1 << 16);
  uint64_t ranges = 1;
  if (slot_bytes > budget * 45 / 100) {
    ranges = (slot_bytes + budget * 3 / 10 - 1) / (budget * 3 / 10);
  }
  if (options_.dedupe && num_records_ > chunk_edges_) {
    // Exact dedupe needs each range's edges in one chunk.
    ranges = std::max<uint64_t>(ranges, (num_records_ + chunk_edges_ - 1) / chunk_edges_ * 2);
  }
  range_bits_ = ranges <= 1 ? 0 : std::bit_width(ranges - 1);
  if (range_bits_ > 12) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "--memory-budget ", budget, " bytes is too small for ", num_nodes_,
        " nodes and ", num_records_, " edges"));
  }
  summary_.key_ranges = 1u << range_bits_;
  ASSIGN_OR_RETURN(auto slot_reader, RecordReader::Open(Scratch("slots")));
  std::optional<SlotRecord> pending;

  auto process_file = [&](const std::string& path, bool translate_src,
                          bool whole_file_chunk) -> absl::Status {
    return weighted() ? ProcessSpill<WeightedEdgeRecord>(path, translate_src, whole_file_chunk)
                      : ProcessSpill<EdgeRecord>(path, translate_src, whole_file_chunk);
  };

  const std::string spill = Scratch("edges.spill");
  if (range_bits_ == 0) {
    RETURN_IF_ERROR(LoadSlotRange(slot_reader.get(), 0, &pending));
    RETURN_IF_ERROR(process_file(spill, /*translate_src=*/true, options_.dedupe));
    slots_.Clear();
    return absl::OkStatus();
  }
  // Step A: by src range. Step B: translate src, regroup by dst range.
  // Step C: translate dst, emit.
  const uint32_t R = 1u << range_bits_;
  RETURN_IF_ERROR(Distribute(spill, Scratch("by-src"), /*by_src=*/true, false));
  CurrentFileSystem()->Remove(spill).IgnoreError();
  for (uint32_t r = 0; r < R; ++r) {
    RETURN_IF_ERROR(LoadSlotRange(slot_reader.get(), r, &pending));
    const std::string in = absl::StrCat(Scratch("by-src"), "-", r, ".part0");
    RETURN_IF_ERROR(Distribute(in, Scratch("by-dst"), /*by_src=*/false, true));
    CurrentFileSystem()->Remove(in).IgnoreError();
  }
  slot_reader.reset();
  ASSIGN_OR_RETURN(slot_reader, RecordReader::Open(Scratch("slots")));
  pending.reset();
  for (uint32_t r = 0; r < R; ++r) {
    RETURN_IF_ERROR(LoadSlotRange(slot_reader.get(), r, &pending));
    // Concatenate the parts written by each step-B pass (part1..partR).
    const std::string merged = absl::StrCat(Scratch("by-dst"), "-", r);
    {
      ASSIGN_OR_RETURN(auto out, RecordWriter::Create(merged));
      std::vector<char> buf(1 << 20);
      for (uint32_t part = 1; part <= R; ++part) {
        const std::string p = absl::StrCat(merged, ".part", part);
        ASSIGN_OR_RETURN(auto in, RecordReader::Open(p));
        while (true) {
          ASSIGN_OR_RETURN(size_t got, in->Read(buf.data(), buf.size()));
          if (got == 0) break;
          RETURN_IF_ERROR(out->Append(buf.data(), got));
        }
        in.reset();
        CurrentFileSystem()->Remove(p).IgnoreError();
      }
      RETURN_IF_ERROR(out->Close());
    }
    RETURN_IF_ERROR(process_file(merged, /*translate_src=*/false, options_.dedupe));
    CurrentFileSystem()->Remove(merged).IgnoreError();
  }
  slots_.Clear();
  return absl::OkStatus();
}

void Importer::Report(const std::string& phase, uint64_t done, uint64_t total,
                      const std::string& unit) {
  if (!options_.progress) return;
  ImportProgress p;
  p.phase = phase;
  p.done = done;
  p.total = total;
  p.unit = unit;
  p.edges_read = num_records_;
  p.elapsed_seconds = Elapsed();
  options_.progress(p);
}

absl::StatusOr<ImportSummary> Importer::Run() {
  RETURN_IF_ERROR(options_.Validate());
  for (const auto& f : options_.files) inputs_.push_back({f, std::nullopt});
  for (const auto& f : options_.valid_files) inputs_.push_back({f, Split::kValid});
  for (const auto& f : options_.test_files) inputs_.push_back({f, Split::kTest});
  bool any_stream = false;
  for (const InputFile& in : inputs_) {
    ASSIGN_OR_RETURN(const std::optional<uint64_t> size, InputBytes(in.path));
    any_stream |= !size.has_value();
    input_bytes_ += size.value_or(0);
  }
  // A stream's size is known only once read: progress shows no total then.
  if (any_stream) input_bytes_ = 0;
  if (options_.append) {
    RETURN_IF_ERROR(OpenForAppend());
    ASSIGN_OR_RETURN(builder_, GraphBuilder::CreateAppend(graph_.get()));
  } else {
    if (!options_.schema.empty()) {
      ASSIGN_OR_RETURN(schema_, ParseSchema(options_.schema));
    }
    RETURN_IF_ERROR(PlanTypes());
    GraphBuilderOptions bopts;
    // With auto the count is set once the nodes are counted (ChoosePartitions).
    bopts.num_partitions = std::max<uint32_t>(num_partitions_, 1);
    bopts.overwrite = options_.overwrite;
    ASSIGN_OR_RETURN(builder_, GraphBuilder::Create(options_.out, bopts));
  }

  RETURN_IF_ERROR(ReadAndParse());
  if (weighted()) {
    summary_.weights =
        EdgeWeightStats{weight_min_, weight_sum_ / static_cast<double>(num_records_), weight_max_};
  }
  if (!options_.append &&
      std::find(type_parts_.begin(), type_parts_.end(), 0u) != type_parts_.end()) {
    RETURN_IF_ERROR(ChoosePartitions());
  }
  RETURN_IF_ERROR(AssignNodes());
  if (!options_.node_feature_files.empty()) {
    FeatureImportOptions fo;
    fo.files = options_.node_feature_files;
    fo.integer_ids = options_.integer_ids;
    fo.skip_bad_lines = options_.skip_bad_lines;
    fo.memory_budget = options_.memory_budget;
    ASSIGN_OR_RETURN(summary_.features,
                     ImportNodeFeatures(builder_.get(), Scratch("slots"),
                                        partition_sizes_, fo));
  }
  RETURN_IF_ERROR(TranslateAndWriteEdges());

  Manifest m;
  if (graph_ != nullptr) {
    m = graph_->manifest();
    m.previous_partition_sizes = m.partition_sizes;
    for (Split s : kAllSplits) m.edges[s] += summary_.edges[s];
    for (size_t i = 0; i < m.train_bucket_edges.size(); ++i) {
      m.train_bucket_edges[i] += train_bucket_edges_[i];
    }
    // The checkpoint is kept as it is; its record's edge generation, now
    // behind the graph's, starts a new epoch count (train/model/train_state.h).
    m.edge_generation = builder_->edge_generation();
  } else {
    m.train_bucket_edges = train_bucket_edges_;
    m.edges = summary_.edges;
    m.partitioner = std::string(PartitionerName(options_.partitioner));
    m.seed = options_.seed;
    m.integer_ids = options_.integer_ids;
    m.degree = degree_;
    m.num_features = summary_.features.vocab_size;
    m.partitions_auto = summary_.partitions_auto;
    if (weighted()) {
      m.SetEdgeWeights(true);
      m.edge_weight_stats = summary_.weights;
    }
  }
  m.num_partitions = num_partitions_;
  m.partition_sizes = partition_sizes_;
  m.num_nodes = 0;
  for (uint64_t s : partition_sizes_) m.num_nodes += s;
  m.relations = relations_;
  if (typed()) {
    m.node_types.clear();
    for (uint32_t t = 0; t < num_types(); ++t) {
      m.node_types.push_back({schema_.types[t], type_first_[t], type_parts_[t]});
    }
    m.relation_types.clear();
    for (const std::string& name : relations_) {
      const GraphSchema::Relation* entry = schema_.Find(name);
      if (entry == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrCat("relation '", name, "' is not in the schema"));
      }
      m.relation_types.push_back(entry->types);
    }
  }
  for (uint32_t t = 0; t < num_types(); ++t) {
    summary_.types[t].name = typed() ? schema_.types[t] : "";
    summary_.types[t].partitions = type_parts_[t];
    summary_.types[t].nodes = m.NodesOf(t);
  }
  Report("commit", 0, 0, "");
  RETURN_IF_ERROR(builder_->Commit(m));
  if (graph_ != nullptr) {  // an append wrote into the graph's DBs
    builder_.reset();
    RETURN_IF_ERROR(graph_->Close());
  }
  num_nodes_ = m.num_nodes;

  summary_.nodes = num_nodes_;
  summary_.relations = relations_.size();
  summary_.partitions = num_partitions_;
  summary_.input_bytes = bytes_before_current_;  // streams: what was read
  summary_.warnings = std::move(warnings_);
  summary_.seconds = Elapsed();
  return summary_;
}

}  // namespace

absl::Status ImportOptions::Validate() const {
  if (out.empty()) return absl::InvalidArgumentError("--out is required");
  if (files.empty() && valid_files.empty() && test_files.empty()) {
    return absl::InvalidArgumentError("no input files");
  }
  if (files.empty()) {
    return absl::InvalidArgumentError("no training input: give at least one FILE");
  }
  if (append && (!schema.empty() || !type_partitions.empty())) {
    return absl::InvalidArgumentError(
        "--schema and --type-partitions do not apply to --append: the graph keeps its schema "
        "and partitions");
  }
  for (const auto& [name, count] : type_partitions) {
    if (count > kMaxAutoPartitions) {
      return absl::InvalidArgumentError(absl::StrCat("--type-partitions ", name, "=", count,
                                                     " is outside [1, ", kMaxAutoPartitions,
                                                     "] (or auto)"));
    }
  }
  if (append && !node_feature_files.empty()) {
    return absl::InvalidArgumentError(
        "--node-features is not supported with --append (import the graph "
        "again with its features)");
  }
  if (num_partitions > kMaxAutoPartitions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--partitions ", num_partitions, " is outside [1, ", kMaxAutoPartitions, "]"));
  }
  if (num_partitions == 0) {
    if (append) {
      return absl::InvalidArgumentError(
          "--partitions auto does not apply to --append: the graph keeps its "
          "partition count");
    }
    if (auto_dim < 1 || auto_dim > 65536) {
      return absl::InvalidArgumentError(
          absl::StrCat("--dim ", auto_dim, " is outside [1, 65536]"));
    }
  }
  if (memory_budget < (64ull << 20)) {
    return absl::InvalidArgumentError("--memory-budget must be at least 64M");
  }
  if (columns.size() != 0 && columns.size() != 2 && columns.size() != 3) {
    return absl::InvalidArgumentError("--columns takes SRC,DST or SRC,REL,DST");
  }
  if (weight_column >= 0) {
    if (weight_column > 1000) {
      return absl::InvalidArgumentError(
          absl::StrCat("--weight-column ", weight_column, " is outside [0, 1000]"));
    }
    if (std::find(columns.begin(), columns.end(), weight_column) != columns.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--weight-column ", weight_column,
                       " is also named by --columns: the weight needs a "
                       "column of its own"));
    }
    if (dedupe) {
      return absl::InvalidArgumentError(
          "--dedupe does not apply to weighted imports (--weight-column): repeated edges would "
          "need their weights merged; merge them in the input");
    }
    if (append) {
      return absl::InvalidArgumentError(
          "--weight-column does not apply to --append: weighted graphs cannot be appended to "
          "yet");
    }
  }
  int stdin_inputs = 0;
  for (const auto* list : {&files, &valid_files, &test_files, &node_feature_files}) {
    stdin_inputs += std::count(list->begin(), list->end(), std::string(kStdinPath));
  }
  if (stdin_inputs > 1) {
    return absl::InvalidArgumentError(
        "standard input (-) can be read once: name it as one input only");
  }
  if ((!valid_files.empty() || !test_files.empty()) && split.fraction[0] < 1.0) {
    return absl::InvalidArgumentError(
        "give either --split or --valid/--test files, not both");
  }
  return absl::OkStatus();
}

absl::StatusOr<ImportSummary> ImportGraph(const ImportOptions& options) {
  const int threads = options.threads > 0 ? options.threads
                                          : tbb::this_task_arena::max_concurrency();
  tbb::task_arena arena(threads);
  absl::StatusOr<ImportSummary> result;
  arena.execute([&] {
    Importer importer(options);
    result = importer.Run();
  });
  return result;
}

absl::StatusOr<uint64_t> ParseByteSize(std::string_view text) {
  std::string t = absl::AsciiStrToUpper(
      absl::StripAsciiWhitespace(absl::string_view(text.data(), text.size())));
  double mult = 1;
  for (auto [suffix, m] : std::initializer_list<std::pair<const char*, double>>{
           {"KIB", 1024.0}, {"MIB", 1024.0 * 1024}, {"GIB", 1024.0 * 1024 * 1024},
           {"TIB", 1024.0 * 1024 * 1024 * 1024}, {"K", 1024.0}, {"M", 1024.0 * 1024},
           {"G", 1024.0 * 1024 * 1024}, {"T", 1024.0 * 1024 * 1024 * 1024},
           {"B", 1.0}}) {
    if (absl::EndsWith(t, suffix)) {
      t.resize(t.size() - std::strlen(suffix));
      mult = m;
      break;
    }
  }
  double v;
  if (!absl::SimpleAtod(t, &v) || !std::isfinite(v) || v < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", std::string(text), "' is not a size (e.g. 512M, 4G)"));
  }
  // Casting a double at or above 2^64 to uint64_t is undefined.
  constexpr double kTwoTo64 = 18446744073709551616.0;
  const double bytes = v * mult;
  if (!(bytes < kTwoTo64)) {
    return absl::InvalidArgumentError(
        absl::StrCat("'", std::string(text), "' is too large a size (at most 2^64 - 1 bytes)"));
  }
  return static_cast<uint64_t>(bytes);
}

}  // namespace ember
