#include "tools/export/neighbors.h"

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/IndexIVFFlat.h>
#include <faiss/impl/FaissException.h>
#include <faiss/impl/io.h>
#include <faiss/index_io.h>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <fstream>
#include <random>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"
#include "storage/base/progress.h"
#include "storage/base/status_macros.h"
#include "tools/export/exporter.h"
#include "train/model/candidate_scorer.h"
#include "train/model/checkpoint.h"

namespace ember::tools {
namespace {

using idx_t = faiss::Index::idx_t;

// PBG clamps norms below at 1e-12 for the cos comparator.
constexpr float kMinNorm = 1e-12f;

float NormalizeRow(float* x, int dim) {
  double s = 0;
  for (int j = 0; j < dim; ++j) s += double{x[j]} * x[j];
  const float norm = std::max(static_cast<float>(std::sqrt(s)), kMinNorm);
  const float inv = 1.0f / norm;
  for (int j = 0; j < dim; ++j) x[j] *= inv;
  return norm;
}

// faiss::write_index into an AtomicOutputFile.
struct AtomicWriter : faiss::IOWriter {
  explicit AtomicWriter(AtomicOutputFile* f) : file(f) { name = f->temp_path(); }
  size_t operator()(const void* ptr, size_t size, size_t nitems) override {
    if (!status.ok()) return 0;
    status = file->Append(std::string_view(static_cast<const char*>(ptr), size * nitems));
    return status.ok() ? nitems : 0;
  }
  AtomicOutputFile* file;
  absl::Status status;
};

double Since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

absl::Status NeighborIndexOptions::Validate() const {
  if (nlist < 0 || nprobe < 0 || ef_search < 0) {
    return absl::InvalidArgumentError("nlist, nprobe and ef-search must be >= 0");
  }
  if (hnsw_m < 2) return absl::InvalidArgumentError("HNSW M must be >= 2");
  if (ef_construction < 1) return absl::InvalidArgumentError("ef-construction must be >= 1");
  return absl::OkStatus();
}

namespace {

// FAISS's k-means wants at least this many training points per list (and
// says so on stderr when it has fewer).
constexpr uint64_t kMinPointsPerList = 39;

// The default: 4·sqrt(n) lists, as FAISS's guidelines suggest, but no more
// than k-means can train on n points (small graphs).
int IvfLists(uint64_t n, const NeighborIndexOptions& options) {
  const int nlist =
      options.nlist > 0
          ? options.nlist
          : std::max<int>(1, std::min<int64_t>(std::lround(4 * std::sqrt(double(n))),
                                               static_cast<int64_t>(n / kMinPointsPerList)));
  return static_cast<int>(std::min<uint64_t>(nlist, n));
}

}  // namespace

uint64_t IndexMemoryBytes(IndexKind kind, uint64_t n, int dim, uint64_t largest_partition,
                          bool cos, const NeighborIndexOptions& options) {
  const uint64_t row = uint64_t(dim) * sizeof(float);
  uint64_t bytes = n * row + largest_partition * row + (cos ? n * sizeof(float) : 0);
  switch (kind) {
    case IndexKind::kFlat:
      break;
    case IndexKind::kHnsw:
      bytes += n * 2 * uint64_t(options.hnsw_m) * sizeof(int32_t) * 5 / 4;
      break;
    case IndexKind::kIvf: {
      const uint64_t lists = IvfLists(n, options);
      bytes += n * 2 * sizeof(int64_t) + std::min<uint64_t>(64 * lists, n) * row + lists * row;
      break;
    }
  }
  return bytes;
}

struct NeighborIndex::Rep {
  const Graph* graph = nullptr;
  StoredModel model;
  NeighborIndexOptions options;
  int dim = 0;
  uint64_t n = 0;
  // The partitions indexed, [first_partition, end_partition): a type's or
  // all; row i of the index is global id first_id + i.
  uint32_t first_partition = 0, end_partition = 0;
  uint64_t first_id = 0;
  bool normalize = false;
  std::vector<float> norms;  // cos only: the norm of each row before normalising
  std::unique_ptr<faiss::Index> index;
  faiss::IndexIVFFlat* ivf = nullptr;    // == index.get() for IVF
  faiss::IndexHNSWFlat* hnsw = nullptr;  // == index.get() for HNSW
  int nlist = 0;
  int nprobe = 0;
  int ef_search = 0;
  double build_seconds = 0;

  // Loads partition p and normalises its rows for cos (recording norms).
  absl::StatusOr<std::vector<float>> LoadRows(uint32_t p) {
    ASSIGN_OR_RETURN(std::vector<float> rows, LoadPartitionEmbeddings(*graph, model, p));
    const uint64_t size = graph->manifest().partition_sizes[p];
    if (rows.size() != size * dim) {
      return absl::DataLossError(absl::StrFormat("graph %s: partition %d has %d floats, expected %d",
                                                 graph->dir(), p, rows.size(), size * dim));
    }
    if (normalize) {
      const uint64_t row = graph->manifest().PartitionBase(p) - first_id;
      for (uint64_t i = 0; i < size; ++i) norms[row + i] = NormalizeRow(&rows[i * dim], dim);
    }
    return rows;
  }

  void Progress(std::string_view phase, uint64_t done, uint64_t total) const {
    if (options.progress) options.progress(phase, done, total);
  }

  absl::Status TrainIvf() {
    // 64 points per centroid (FAISS wants >= kMinPointsPerList): k-means cost is what
    // dominates an IVF build.
    const uint64_t max_sample = uint64_t{64} * nlist;
    std::vector<uint64_t> ids;
    if (n <= max_sample) {
      ids.resize(n);
      for (uint64_t i = 0; i < n; ++i) ids[i] = i;
    } else {
      std::mt19937_64 rng(options.seed);
      ids.reserve(max_sample);
      // Selection sampling (Knuth's algorithm S): sorted, uniform.
      uint64_t needed = max_sample;
      for (uint64_t i = 0; i < n && needed > 0; ++i) {
        if (std::uniform_int_distribution<uint64_t>(0, n - i - 1)(rng) < needed) {
          ids.push_back(i);
          --needed;
        }
      }
    }
    std::vector<float> sample(ids.size() * dim);
    size_t next = 0;
    const Manifest& m = graph->manifest();
    for (uint32_t p = first_partition; p < end_partition && next < ids.size(); ++p) {
      // Rows of the index, not global ids.
      const uint64_t base = m.PartitionBase(p) - first_id, size = m.partition_sizes[p];
      if (ids[next] >= base + size) continue;
      ASSIGN_OR_RETURN(std::vector<float> rows, LoadRows(p));
      for (; next < ids.size() && ids[next] < base + size; ++next) {
        std::copy_n(&rows[(ids[next] - base) * dim], dim, &sample[next * dim]);
      }
      Progress("ivf sample", p - first_partition + 1, end_partition - first_partition);
    }
    ivf->train(static_cast<idx_t>(ids.size()), sample.data());
    return absl::OkStatus();
  }

  absl::Status BuildIndex() {
    const Manifest& m = graph->manifest();
    const faiss::MetricType metric =
        model.model.comparator == Comparator::kL2 ? faiss::METRIC_L2 : faiss::METRIC_INNER_PRODUCT;
    switch (options.kind) {
      case IndexKind::kFlat:
        index = std::make_unique<faiss::IndexFlat>(dim, metric);
        break;
      case IndexKind::kHnsw: {
        auto h = std::make_unique<faiss::IndexHNSWFlat>(dim, options.hnsw_m, metric);
        h->hnsw.efConstruction = options.ef_construction;
        ef_search = options.ef_search > 0 ? options.ef_search : 256;
        h->hnsw.efSearch = ef_search;
        hnsw = h.get();
        index = std::move(h);
        break;
      }
      case IndexKind::kIvf: {
        nlist = IvfLists(n, options);
        nprobe = options.nprobe > 0 ? options.nprobe : std::max(8, nlist / 8);
        nprobe = std::min(nprobe, nlist);
        auto* quantizer = new faiss::IndexFlat(dim, metric);
        auto v = std::make_unique<faiss::IndexIVFFlat>(quantizer, dim, nlist, metric);
        v->own_fields = true;
        v->cp.seed = static_cast<int>(options.seed);
        v->nprobe = nprobe;
        ivf = v.get();
        index = std::move(v);
        RETURN_IF_ERROR(TrainIvf());
        // Rows are reconstructed by id when rescoring.
        ivf->make_direct_map(true);
        break;
      }
    }
    for (uint32_t p = first_partition; p < end_partition; ++p) {
      ASSIGN_OR_RETURN(std::vector<float> rows, LoadRows(p));
      index->add(static_cast<idx_t>(m.partition_sizes[p]), rows.data());
      Progress("index", p - first_partition + 1, end_partition - first_partition);
    }
    if (static_cast<uint64_t>(index->ntotal) != n) {
      return absl::InternalError(
          absl::StrFormat("index holds %d rows, expected %d", index->ntotal, n));
    }
    return absl::OkStatus();
  }

  // The model's comparator score of query q (normalised for cos) against
  // stored row v (as stored: normalised for cos).
  float Score(const float* q, const float* v) const {
    if (model.model.comparator == Comparator::kL2) {
      double s = 0;
      for (int j = 0; j < dim; ++j) {
        const double diff = double{q[j]} - v[j];
        s += diff * diff;
      }
      return -static_cast<float>(std::sqrt(s));
    }
    double s = 0;
    for (int j = 0; j < dim; ++j) s += double{q[j]} * v[j];
    return static_cast<float>(s);
  }
};

NeighborIndex::NeighborIndex(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}
NeighborIndex::~NeighborIndex() = default;

absl::StatusOr<std::unique_ptr<NeighborIndex>> NeighborIndex::Build(
    const Graph& graph, const NeighborIndexOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  const auto start = std::chrono::steady_clock::now();
  // FAISS parallelises with OpenMP (process-wide).
  if (options.threads > 0) omp_set_num_threads(options.threads);
  auto rep = std::make_unique<Rep>();
  rep->graph = &graph;
  rep->options = options;
  ASSIGN_OR_RETURN(rep->model, LoadStoredModel(graph));
  rep->dim = rep->model.model.dim;
  const Manifest& m = graph.manifest();
  if (options.type.empty()) {
    rep->first_partition = 0;
    rep->end_partition = m.num_partitions;
    rep->n = m.num_nodes;
  } else {
    ASSIGN_OR_RETURN(const uint32_t t, m.FindType(options.type));
    rep->first_partition = m.FirstPartitionOf(t);
    rep->end_partition = m.EndPartitionOf(t);
    rep->n = m.NodesOf(t);
  }
  rep->first_id = m.PartitionBase(rep->first_partition);
  uint64_t largest = 0;
  for (uint32_t p = rep->first_partition; p < rep->end_partition; ++p) {
    largest = std::max(largest, m.partition_sizes[p]);
  }
  if (rep->n == 0) {
    return absl::FailedPreconditionError(
        options.type.empty()
            ? absl::StrCat("graph ", graph.dir(), " has no nodes")
            : absl::StrCat("type '", options.type, "' of graph ", graph.dir(), " has no nodes"));
  }
  if (rep->model.partition_versions.size() != graph.manifest().num_partitions) {
    return absl::DataLossError(absl::StrCat("graph ", graph.dir(),
                                            ": checkpoint partition versions do not match "
                                            "the partition count"));
  }
  rep->normalize = rep->model.model.comparator == Comparator::kCos;
  if (options.memory_budget > 0) {
    const uint64_t need =
        IndexMemoryBytes(options.kind, rep->n, rep->dim, largest, rep->normalize, options);
    if (need > options.memory_budget) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "graph %s: a %s index of %d nodes x %d dims needs about %s (FAISS holds every "
          "vector in memory), over the memory budget of %s; raise --memory-budget",
          graph.dir(), std::string(IndexKindName(options.kind)), rep->n, rep->dim, HumanBytes(need),
          HumanBytes(options.memory_budget)));
    }
  }
  if (rep->normalize) rep->norms.assign(rep->n, 1.0f);
  try {
    RETURN_IF_ERROR(rep->BuildIndex());
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("FAISS failed building the ",
                                            std::string(IndexKindName(options.kind)),
                                            " index: ", e.what()));
  }
  rep->build_seconds = Since(start);
  return std::unique_ptr<NeighborIndex>(new NeighborIndex(std::move(rep)));
}

absl::StatusOr<std::vector<NeighborList>> NeighborIndex::Search(
    const std::vector<std::string>& nodes, const std::string& relation, int k,
    bool exclude_known) const {
  const Rep& r = *rep_;
  const Manifest& m = r.graph->manifest();
  const int d = r.dim;
  if (k < 1) return absl::InvalidArgumentError(absl::StrCat("k must be >= 1, got ", k));
  if (exclude_known && relation.empty()) {
    return absl::InvalidArgumentError(
        "leaving out known links needs a relation: what the query already links to through it");
  }
  const float* param = nullptr;
  uint32_t rel = 0;
  if (!relation.empty()) {
    auto it = std::find(m.relations.begin(), m.relations.end(), relation);
    // A reciprocal model's inverse relation: NAME_inv, unless the graph has
    // a relation of that name.
    bool inverse = false;
    if (it == m.relations.end() && r.model.model.reciprocal &&
        relation.ends_with(kInverseRelationSuffix)) {
      const std::string forward =
          relation.substr(0, relation.size() - std::string_view(kInverseRelationSuffix).size());
      it = std::find(m.relations.begin(), m.relations.end(), forward);
      inverse = it != m.relations.end();
    }
    if (it == m.relations.end()) {
      return absl::NotFoundError(absl::StrCat(
          "unknown relation '", relation, "' in graph ", r.graph->dir(),
          " (relations: ", absl::StrJoin(m.relations, ", "),
          r.model.model.reciprocal
              ? absl::StrCat("; the inverse of each: its name and ", kInverseRelationSuffix)
              : "",
          ")"));
    }
    rel = static_cast<uint32_t>(it - m.relations.begin());
    if (inverse && exclude_known) {
      return absl::InvalidArgumentError(
          absl::StrCat("leaving out known links takes a forward relation, not the inverse '",
                       relation, "': the train split's links run from source to destination"));
    }
    if (r.model.relations.param_size > 0) {
      if (rel >= r.model.relations.num_relations) {
        return absl::DataLossError(absl::StrCat("checkpoint has no parameters for relation '",
                                                relation, "'"));
      }
      param = r.model.relations.Of(rel) +
              (inverse ? RelationParamSize(r.model.model.op, r.model.model.dim) : 0);
    }
  }

  // The queries' nodes, and which partitions they are in.
  const size_t nq = nodes.size();
  std::vector<NodeRef> refs(nq);
  std::vector<uint64_t> query_ids(nq);
  for (size_t i = 0; i < nq; ++i) {
    auto ref = r.graph->LookupNode(nodes[i]);
    if (!ref.ok()) {
      if (absl::IsNotFound(ref.status())) {
        return absl::NotFoundError(
            absl::StrCat("unknown node '", nodes[i], "' in graph ", r.graph->dir()));
      }
      return ref.status();
    }
    refs[i] = *ref;
    query_ids[i] = r.graph->GlobalId(*ref);
  }
  auto indexed = [&r](uint64_t id) { return id >= r.first_id && id - r.first_id < r.n; };
  // Queries grouped by partition, for the reads below (one partition at a
  // time).
  std::vector<std::pair<uint32_t, size_t>> by_partition(nq);
  for (size_t i = 0; i < nq; ++i) by_partition[i] = {refs[i].partition, i};
  std::sort(by_partition.begin(), by_partition.end());

  // Query vectors: a row of the index as FAISS holds it (its norm put back
  // for cos), or, for a query outside the index, its row from the
  // checkpoint.
  std::vector<float> queries(nq * d);
  std::vector<float> raw(d);
  for (size_t g = 0; g < nq;) {
    const uint32_t p = by_partition[g].first;
    size_t end = g;
    bool outside = false;
    while (end < nq && by_partition[end].first == p) {
      outside = outside || !indexed(query_ids[by_partition[end].second]);
      ++end;
    }
    std::vector<float> rows;
    if (outside) {
      ASSIGN_OR_RETURN(rows, LoadPartitionEmbeddings(*r.graph, r.model, p));
      if (rows.size() != m.partition_sizes[p] * d) {
        return absl::DataLossError(
            absl::StrFormat("graph %s: partition %d has %d floats, "
                            "expected %d",
                            r.graph->dir(), p, rows.size(), m.partition_sizes[p] * d));
      }
    }
    for (; g < end; ++g) {
      const size_t i = by_partition[g].second;
      const uint64_t id = query_ids[i];
      if (indexed(id)) {
        try {
          r.index->reconstruct(static_cast<idx_t>(id - r.first_id), raw.data());
        } catch (const std::exception& e) {
          return absl::InternalError(absl::StrCat("FAISS reconstruct failed: ", e.what()));
        }
        if (r.normalize) {
          const float norm = r.norms[id - r.first_id];
          for (float& x : raw) x *= norm;
        }
      } else {
        std::copy_n(&rows[uint64_t(refs[i].offset) * d], d, raw.data());
      }
      float* q = &queries[i * d];
      if (relation.empty()) {
        std::copy(raw.begin(), raw.end(), q);
      } else {
        ApplyOperator(r.model.model.op, param, raw.data(), 1, d, q);
      }
      if (r.normalize) NormalizeRow(q, d);
    }
  }

  // What each query links to through the relation in the train split (rows
  // of the index, sorted): read from the train edges of its partition, whose
  // shard holds every edge leaving it.
  std::vector<std::vector<uint64_t>> known(exclude_known ? nq : 0);
  size_t most_known = 0;
  if (exclude_known) {
    uint32_t dst_first = 0, dst_end = m.num_partitions;
    if (m.typed()) {
      const uint32_t t = m.relation_types[rel].dst;
      dst_first = m.FirstPartitionOf(t);
      dst_end = m.EndPartitionOf(t);
    }
    for (size_t g = 0; g < nq;) {
      const uint32_t p = by_partition[g].first;
      size_t end = g;
      while (end < nq && by_partition[end].first == p) ++end;
      // Offset in p -> the queries at it (a node may be asked twice).
      absl::flat_hash_map<uint32_t, std::vector<size_t>> at;
      for (size_t j = g; j < end; ++j) {
        at[refs[by_partition[j].second].offset].push_back(by_partition[j].second);
      }
      for (uint32_t dp = dst_first; dp < dst_end; ++dp) {
        const uint64_t base = m.PartitionBase(dp);
        RETURN_IF_ERROR(r.graph->ForEachEdgeBlock(
            Split::kTrain, p, dp, [&](std::span<const Edge> block) -> absl::Status {
              for (const Edge& e : block) {
                if (e.rel != rel) continue;
                auto it = at.find(e.src);
                if (it == at.end() || !indexed(base + e.dst)) continue;
                for (size_t i : it->second) known[i].push_back(base + e.dst - r.first_id);
              }
              return absl::OkStatus();
            }));
      }
      for (size_t j = g; j < end; ++j) {
        std::vector<uint64_t>& list = known[by_partition[j].second];
        std::sort(list.begin(), list.end());
        list.erase(std::unique(list.begin(), list.end()), list.end());
        most_known = std::max(most_known, list.size());
      }
      g = end;
    }
  }

  // Candidates: k + 1 + what may be left out, so that k remain once the
  // query and its known links are dropped.
  const idx_t kk = static_cast<idx_t>(std::min<uint64_t>(uint64_t(k) + 1 + most_known, r.n));
  std::vector<float> distances(nq * kk);
  std::vector<idx_t> labels(nq * kk);
  try {
    if (r.hnsw != nullptr) r.hnsw->hnsw.efSearch = std::max<int>(r.ef_search, kk);
    if (nq > 0) {
      r.index->search(static_cast<idx_t>(nq), queries.data(), kk, distances.data(),
                      labels.data());
    }
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("FAISS search failed: ", e.what()));
  }

  std::vector<NeighborList> out(nq);
  std::vector<float> row(d);
  std::vector<std::pair<float, uint64_t>> scored;
  for (size_t i = 0; i < nq; ++i) {
    out[i].node = nodes[i];
    scored.clear();
    const float* q = &queries[i * d];
    for (idx_t j = 0; j < kk; ++j) {
      const idx_t label = labels[i * kk + j];
      if (label < 0) continue;
      const uint64_t id = r.first_id + static_cast<uint64_t>(label);
      if (id == query_ids[i]) continue;
      if (exclude_known &&
          std::binary_search(known[i].begin(), known[i].end(), static_cast<uint64_t>(label))) {
        continue;
      }
      try {
        r.index->reconstruct(label, row.data());
      } catch (const std::exception& e) {
        return absl::InternalError(absl::StrCat("FAISS reconstruct failed: ", e.what()));
      }
      scored.emplace_back(r.Score(q, row.data()), id);
    }
    std::sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    if (scored.size() > static_cast<size_t>(k)) scored.resize(k);
    for (const auto& [score, id] : scored) {
      ASSIGN_OR_RETURN(NodeRef ref, r.graph->NodeFromGlobalId(id));
      ASSIGN_OR_RETURN(std::string name, r.graph->NodeName(ref));
      out[i].neighbors.push_back({std::move(name), id, score});
    }
  }
  return out;
}

absl::Status NeighborIndex::Save(const std::string& path, bool overwrite) const {
  const Rep& r = *rep_;
  ASSIGN_OR_RETURN(auto index_file, AtomicOutputFile::Create(path, overwrite));
  ASSIGN_OR_RETURN(auto names_file, AtomicOutputFile::Create(path + ".names.tsv", overwrite));
  ASSIGN_OR_RETURN(auto meta_file, AtomicOutputFile::Create(path + ".meta.json", overwrite));

  std::string text;
  for (uint32_t p = r.first_partition; p < r.end_partition; ++p) {
    RETURN_IF_ERROR(r.graph->ForEachNodeName(p, [&](uint32_t, std::string_view name) {
      text.append(name.data(), name.size());
      text.push_back('\n');
      if (text.size() >= (1 << 20)) {
        RETURN_IF_ERROR(names_file->Append(text));
        text.clear();
      }
      return absl::OkStatus();
    }));
  }
  RETURN_IF_ERROR(names_file->Append(text));

  nlohmann::json meta = nlohmann::json::parse(
      MetaJson(*r.graph, r.model, "faiss", path.substr(path.rfind('/') + 1),
               names_file->path().substr(names_file->path().rfind('/') + 1), r.options.type));
  meta["index"] = std::string(IndexKindName(r.options.kind));
  meta["faiss_metric"] = r.model.model.comparator == Comparator::kL2 ? "METRIC_L2"
                                                                     : "METRIC_INNER_PRODUCT";
  meta["normalize_queries"] = r.normalize;
  if (r.ivf != nullptr) {
    meta["nlist"] = r.nlist;
    meta["nprobe"] = r.nprobe;
  }
  if (r.hnsw != nullptr) {
    meta["hnsw_m"] = r.options.hnsw_m;
    meta["ef_search"] = r.ef_search;
  }
  RETURN_IF_ERROR(meta_file->Append(meta.dump(2) + "\n"));

  AtomicWriter writer(index_file.get());
  try {
    faiss::write_index(r.index.get(), &writer);
  } catch (const std::exception& e) {
    return absl::InternalError(absl::StrCat("FAISS cannot write ", path, ": ", e.what()));
  }
  RETURN_IF_ERROR(writer.status);
  RETURN_IF_ERROR(index_file->Close());
  RETURN_IF_ERROR(names_file->Commit());
  RETURN_IF_ERROR(meta_file->Commit());
  return index_file->Commit();
}

uint64_t NeighborIndex::size() const { return rep_->n; }
uint64_t NeighborIndex::first_id() const { return rep_->first_id; }
int NeighborIndex::dim() const { return rep_->dim; }
Comparator NeighborIndex::comparator() const { return rep_->model.model.comparator; }
std::string_view NeighborIndex::metric() const {
  return NearestNeighborMetric(rep_->model.model.comparator);
}
int NeighborIndex::nlist() const { return rep_->nlist; }
int NeighborIndex::nprobe() const { return rep_->nprobe; }
int NeighborIndex::ef_search() const { return rep_->ef_search; }
double NeighborIndex::build_seconds() const { return rep_->build_seconds; }

absl::StatusOr<std::vector<std::string>> ReadQueryFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open query file ", path));
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    out.push_back(line);
  }
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read query file ", path));
  return out;
}

std::string NeighborListJson(const NeighborList& list) {
  // Ordered: "node" before "neighbors", as documented.
  nlohmann::ordered_json neighbors = nlohmann::ordered_json::array();
  for (const Neighbor& n : list.neighbors) {
    neighbors.push_back({{"node", n.node}, {"score", n.score}});
  }
  return nlohmann::ordered_json{{"node", list.node}, {"neighbors", neighbors}}.dump();
}

}  // namespace ember::tools
