#include "train/model/feature_table.h"

#include <cstring>
#include <span>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "storage/base/node_hash.h"
#include "train/model/init.h"

namespace ember {

FeatureTable InitFeatureTable(uint32_t rows, int dim, float init_scale, uint64_t seed) {
  FeatureTable t;
  t.rows = rows;
  t.dim = dim;
  t.embeddings.resize(size_t{rows} * dim);
  t.optimizer.assign(rows, 0.0f);
  InitEmbeddings(InitDistribution::kNormal, init_scale, Mix64(seed, 0xfea7u), 0, rows, dim,
                 t.embeddings.data());
  return t;
}

std::string FeatureTableBlobName(uint64_t version) {
  return absl::StrCat(kFeatureTableBlobPrefix, version);
}

std::array<std::string_view, 3> FeatureTableBlobParts(const FeatureTable& t,
                                                      std::array<uint32_t, 2>* header) {
  *header = {t.rows, static_cast<uint32_t>(t.dim)};
  return {std::string_view(reinterpret_cast<const char*>(header->data()), sizeof(*header)),
          std::string_view(reinterpret_cast<const char*>(t.embeddings.data()),
                           t.embeddings.size() * sizeof(float)),
          std::string_view(reinterpret_cast<const char*>(t.optimizer.data()),
                           t.optimizer.size() * sizeof(float))};
}

absl::StatusOr<FeatureTable> ReadFeatureTable(const Graph& graph, uint64_t version,
                                              uint32_t rows, int dim) {
  FeatureTable t;
  t.rows = rows;
  t.dim = dim;
  t.embeddings.resize(size_t{rows} * dim);
  t.optimizer.resize(rows);
  std::array<uint32_t, 2> header = {0, 0};
  auto bytes = [](auto& v) {
    return std::span<char>(reinterpret_cast<char*>(v.data()), v.size() * sizeof(v[0]));
  };
  const std::span<char> parts[] = {bytes(header), bytes(t.embeddings), bytes(t.optimizer)};
  const std::string name = FeatureTableBlobName(version);
  if (absl::Status s = graph.ReadBlobInto(name, parts); !s.ok()) {
    return absl::Status(s.code(), absl::StrCat(graph.dir(), ": feature table of checkpoint ",
                                               version, " (", rows, " x ", dim, "): ",
                                               s.message()));
  }
  if (header[0] != rows || header[1] != static_cast<uint32_t>(dim)) {
    return absl::DataLossError(absl::StrCat(graph.dir(), "/blobs/", name, " holds ", header[0],
                                            " x ", header[1], " rows, expected ", rows, " x ",
                                            dim));
  }
  return t;
}

void ComposePartition(FeaturizedMode mode, const FeatureTable& table, uint64_t rows,
                      const std::vector<uint64_t>& row_start,
                      const std::vector<FeatureEntry>& entries, const float* id_rows,
                      float* out) {
  // In blocks, so that the node index list stays small.
  constexpr uint64_t kBlock = 4096;
  std::vector<uint32_t> nodes;
  for (uint64_t lo = 0; lo < rows; lo += kBlock) {
    const uint64_t n = std::min(kBlock, rows - lo);
    nodes.resize(n);
    std::iota(nodes.begin(), nodes.end(), static_cast<uint32_t>(lo));
    ComposeEmbeddings(mode, table.dim, nodes, row_start.data(), entries.data(),
                      table.embeddings.data(),
                      id_rows == nullptr ? nullptr : id_rows + lo * table.dim,
                      out + lo * table.dim);
  }
}

}  // namespace ember
