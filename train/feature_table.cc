#include "train/feature_table.h"

#include <cstring>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "storage/node_hash.h"
#include "train/init.h"

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

absl::StatusOr<FeatureTable> DecodeFeatureTable(std::string_view bytes) {
  uint32_t header[2];
  if (bytes.size() < sizeof(header)) return absl::DataLossError("feature table blob too short");
  std::memcpy(header, bytes.data(), sizeof(header));
  FeatureTable t;
  t.rows = header[0];
  t.dim = static_cast<int>(header[1]);
  const size_t floats = size_t{t.rows} * t.dim + t.rows;
  if (t.dim < 1 || bytes.size() != sizeof(header) + floats * sizeof(float)) {
    return absl::DataLossError(absl::StrCat("feature table blob has ", bytes.size(),
                                            " bytes, expected ",
                                            sizeof(header) + floats * sizeof(float)));
  }
  t.embeddings.resize(size_t{t.rows} * t.dim);
  t.optimizer.resize(t.rows);
  const char* p = bytes.data() + sizeof(header);
  std::memcpy(t.embeddings.data(), p, t.embeddings.size() * sizeof(float));
  std::memcpy(t.optimizer.data(), p + t.embeddings.size() * sizeof(float),
              t.optimizer.size() * sizeof(float));
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
