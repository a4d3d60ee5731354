#include "tools/gen/sbm_generator.h"

#include <algorithm>
#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/gen/gen_random.h"

namespace ember::tools::gen {
namespace {

constexpr uint64_t kEdgeStream = 0x53424d45'44474553ULL;  // "SBMEDGES"
constexpr uint64_t kMaxNodes = uint64_t{1} << 48;
constexpr uint64_t kMaxEdges = uint64_t{1} << 48;
constexpr uint64_t kMaxChunkEdges = uint64_t{1} << 24;
constexpr uint64_t kLabelsPerChunk = uint64_t{1} << 20;

// Calls fn(src, dst) for each edge of chunk `chunk_index`, in order.
template <typename Fn>
void ForEachSbmEdge(const SbmOptions& options, uint64_t chunk_index, Fn&& fn) {
  const uint64_t n = options.nodes;
  const uint64_t k = options.blocks;
  const uint64_t full_rows = n / k;  // node i sits in row i / k, column i % k
  const uint64_t rem = n % k;
  // P(inter-block) as a threshold on a 64-bit random word. mixing == 1 must
  // always pick inter-block, so it is handled by a flag, not the threshold.
  const bool always_inter = options.mixing >= 1.0;
  const uint64_t inter_threshold =
      always_inter ? 0 : static_cast<uint64_t>(std::ldexp(options.mixing, 64));
  Xoshiro256 rng(StreamKey(options.seed, kEdgeStream, chunk_index));

  const uint64_t count = options.chunk_size(chunk_index);
  for (uint64_t e = 0; e < count; ++e) {
    const uint64_t src = rng.Below(n);
    const uint64_t block = src % k;
    const uint64_t block_size = full_rows + (block < rem ? 1 : 0);
    uint64_t dst;
    if (always_inter || rng.Next() < inter_threshold) {
      // Uniform over the n - block_size nodes outside `block`: enumerate
      // them row-major over the k - 1 other columns. A partial last row
      // holds columns [0, rem), minus `block` if it is among them, which is
      // exactly the tail of that enumeration.
      const uint64_t t = rng.Below(n - block_size);
      const uint64_t row = t / (k - 1);
      uint64_t col = t % (k - 1);
      if (col >= block) ++col;
      dst = row * k + col;
    } else {
      // Uniform over the other block_size - 1 members of `block`.
      const uint64_t self = src / k;
      uint64_t j = rng.Below(block_size - 1);
      if (j >= self) ++j;
      dst = j * k + block;
    }
    fn(src, dst);
  }
}

}  // namespace

absl::Status SbmOptions::Validate() const {
  if (nodes < 2 || nodes > kMaxNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nodes must be in [2, 2^48], got ", nodes));
  }
  if (blocks < 1 || blocks > nodes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--blocks must be in [1, --nodes=", nodes, "], got ", blocks));
  }
  if (!(mixing >= 0 && mixing <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--mixing must be in [0, 1], got ", mixing));
  }
  if (mixing > 0 && blocks < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--mixing ", mixing, " > 0 needs --blocks >= 2 (inter-block edges)"));
  }
  if (mixing < 1 && nodes / blocks < 2) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--mixing ", mixing,
        " < 1 needs at least 2 nodes per block, but "
        "--nodes=",
        nodes, " / --blocks=", blocks, " leaves blocks of ", nodes / blocks));
  }
  if (!(avg_degree > 0) || !std::isfinite(avg_degree)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--avg-degree must be > 0, got ", avg_degree));
  }
  if (static_cast<double>(nodes) * avg_degree / 2 >
      static_cast<double>(kMaxEdges)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--nodes * --avg-degree / 2 exceeds the limit of 2^48 edges"));
  }
  if (num_edges() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--nodes=", nodes, " and --avg-degree=", avg_degree,
                     " give no edges (round(N * D / 2) = 0)"));
  }
  if (chunk_edges < 1 || chunk_edges > kMaxChunkEdges) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk_edges must be in [1, ", kMaxChunkEdges, "], got ", chunk_edges));
  }
  return absl::OkStatus();
}

uint64_t SbmOptions::num_edges() const {
  return static_cast<uint64_t>(
      std::llround(static_cast<double>(nodes) * avg_degree / 2));
}

uint64_t SbmOptions::chunk_size(uint64_t index) const {
  const uint64_t begin = index * chunk_edges;
  const uint64_t total = num_edges();
  return begin >= total ? 0 : std::min(chunk_edges, total - begin);
}

void SbmChunk(const SbmOptions& options, uint64_t chunk_index,
              std::vector<std::pair<uint64_t, uint64_t>>* out) {
  out->clear();
  out->reserve(options.chunk_size(chunk_index));
  ForEachSbmEdge(options, chunk_index, [out](uint64_t src, uint64_t dst) {
    out->emplace_back(src, dst);
  });
}

void AppendSbmChunkText(const SbmOptions& options, uint64_t chunk_index,
                        std::string* text) {
  const size_t max_line = 2 * DecimalDigits(options.nodes - 1) + 2;
  const size_t old_size = text->size();
  text->resize(old_size + options.chunk_size(chunk_index) * max_line);
  char* p = text->data() + old_size;
  char* const end = text->data() + text->size();
  ForEachSbmEdge(options, chunk_index, [&p, end](uint64_t src, uint64_t dst) {
    p = std::to_chars(p, end, src).ptr;
    *p++ = '\t';
    p = std::to_chars(p, end, dst).ptr;
    *p++ = '\n';
  });
  text->resize(static_cast<size_t>(p - text->data()));
}

absl::Status GenerateSbm(const SbmOptions& options,
                         const GenOutputOptions& output,
                         const std::string& labels_path, GenStats* stats) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = output.Validate(); !s.ok()) return s;
  if (labels_path.empty()) {
    return absl::InvalidArgumentError(
        "--labels-out: a labels output path is required");
  }
  if (labels_path == output.path) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--labels-out and --out must differ, both are '", labels_path, "'"));
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<GenOutputFile>> edges =
      GenOutputFile::Create(output.path, output.overwrite, output.gzip_level);
  if (!edges.ok()) return edges.status();
  absl::StatusOr<std::unique_ptr<GenOutputFile>> labels =
      GenOutputFile::Create(labels_path, output.overwrite, output.gzip_level);
  if (!labels.ok()) return labels.status();

  absl::Status s = WriteChunksInOrder(
      options.num_chunks(), options.num_edges(),
      [&options](uint64_t i, std::string* text) {
        AppendSbmChunkText(options, i, text);
      },
      [&options](uint64_t i) { return options.chunk_size(i); }, output,
      "gen sbm", "edges", edges->get());
  if (!s.ok()) return s;

  const uint64_t n = options.nodes;
  const uint64_t label_chunks = (n + kLabelsPerChunk - 1) / kLabelsPerChunk;
  auto labels_in = [n](uint64_t i) {
    return std::min(kLabelsPerChunk, n - i * kLabelsPerChunk);
  };
  GenOutputOptions label_output = output;
  label_output.path = labels_path;
  label_output.progress = false;  // fast next to the edges; no second meter
  s = WriteChunksInOrder(
      label_chunks, n,
      [&options, &labels_in](uint64_t i, std::string* text) {
        const uint64_t begin = i * kLabelsPerChunk;
        const uint64_t count = labels_in(i);
        text->resize(count * (DecimalDigits(options.nodes - 1) +
                              DecimalDigits(options.blocks - 1) + 2));
        char* p = text->data();
        char* const end = text->data() + text->size();
        for (uint64_t node = begin; node < begin + count; ++node) {
          p = std::to_chars(p, end, node).ptr;
          *p++ = '\t';
          p = std::to_chars(p, end, options.block_of(node)).ptr;
          *p++ = '\n';
        }
        text->resize(static_cast<size_t>(p - text->data()));
      },
      labels_in, label_output, "gen sbm labels", "nodes", labels->get());
  if (!s.ok()) return s;

  if (s = (*edges)->Commit(); !s.ok()) return s;
  if (s = (*labels)->Commit(); !s.ok()) return s;
  if (stats != nullptr) {
    stats->nodes = options.nodes;
    stats->edges = options.num_edges();
    stats->bytes_written = (*edges)->bytes_written();
    stats->seconds = absl::ToDoubleSeconds(absl::Now() - start);
  }
  return absl::OkStatus();
}

}  // namespace ember::tools::gen
