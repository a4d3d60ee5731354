#include "tools/gen/rmat_generator.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tools/gen/gen_random.h"

namespace ember::tools::gen {
namespace {

// Stream tags: independent random streams derived from the one seed.
constexpr uint64_t kEdgeStream = 0x524d4154'45444745ULL;      // "RMATEDGE"
constexpr uint64_t kScrambleStream = 0x524d4154'5343524dULL;  // "RMATSCRM"
constexpr uint64_t kHubIdStream = 0x524d4154'48554249ULL;     // "RMATHUBI"
constexpr uint64_t kHubEdgeStream = 0x524d4154'48554245ULL;   // "RMATHUBE"
constexpr uint64_t kHubTargetStream = 0x524d4154'48554254ULL;  // "RMATHUBT"

constexpr int kMaxScale = 40;
constexpr uint64_t kMaxEdges = uint64_t{1} << 48;
constexpr uint32_t kMaxRelations = 1u << 20;
constexpr uint64_t kMaxChunkEdges = uint64_t{1} << 24;

// Calls fn(src, dst, relation) for each edge of chunk `chunk_index`, in
// order. Quadrant choice: each 64-bit random word yields four 16-bit slices
// u, one per level; the quadrant q = [u >= ta] + [u >= tab] + [u >= tabc] is
// 0=a, 1=b, 2=c, 3=d, whose high bit goes to the source and low bit to the
// destination. Probabilities are thus quantised to multiples of 2^-16.
template <typename Fn>
void ForEachRmatEdge(const RmatOptions& options, uint64_t chunk_index,
                     Fn&& fn) {
  const uint32_t ta = static_cast<uint32_t>(std::lround(options.a * 65536.0));
  const uint32_t tab =
      static_cast<uint32_t>(std::lround((options.a + options.b) * 65536.0));
  const uint32_t tabc = static_cast<uint32_t>(
      std::lround((options.a + options.b + options.c) * 65536.0));
  const int scale = options.scale;
  const uint32_t relations = options.relations;
  const bool scramble = options.scramble;
  const RmatIdScrambler scrambler(scale, options.seed);
  Xoshiro256 rng(StreamKey(options.seed, kEdgeStream, chunk_index));

  // This chunk's positions [begin, end) in the edge sequence: R-MAT edges
  // below num_rmat_edges(), hub edges from there on.
  const uint64_t begin = chunk_index * options.chunk_edges;
  const uint64_t end = begin + options.chunk_size(chunk_index);
  const uint64_t rmat_end = options.num_rmat_edges();
  const uint64_t n =
      end <= rmat_end ? end - begin : (begin < rmat_end ? rmat_end - begin : 0);
  for (uint64_t e = 0; e < n; ++e) {
    uint64_t src = 0;
    uint64_t dst = 0;
    int level = 0;
    while (level < scale) {
      uint64_t w = rng.Next();
      const int take = std::min(4, scale - level);
      for (int k = 0; k < take; ++k) {
        const uint32_t u = static_cast<uint32_t>(w & 0xffff);
        w >>= 16;
        const uint32_t q = static_cast<uint32_t>(u >= ta) +
                           static_cast<uint32_t>(u >= tab) +
                           static_cast<uint32_t>(u >= tabc);
        src = (src << 1) | (q >> 1);
        dst = (dst << 1) | (q & 1);
      }
      level += take;
    }
    const uint32_t rel =
        relations > 1 ? static_cast<uint32_t>(rng.Below(relations)) : 0;
    if (scramble) {
      src = scrambler(src);
      dst = scrambler(dst);
    }
    fn(src, dst, rel);
  }

  if (end <= rmat_end) return;
  Xoshiro256 hub_rng(StreamKey(options.seed, kHubEdgeStream, chunk_index));
  const uint64_t per_hub = options.hub_edges();
  uint64_t hub = options.hubs;  // none yet
  uint64_t hub_id = 0;
  std::optional<RmatIdScrambler> targets;
  for (uint64_t q = std::max(begin, rmat_end) - rmat_end; q < end - rmat_end;
       ++q) {
    if (q / per_hub != hub) {
      hub = q / per_hub;
      hub_id = options.HubId(hub);
      targets.emplace(scale, StreamKey(options.seed, kHubTargetStream, hub));
    }
    const uint32_t rel =
        relations > 1 ? static_cast<uint32_t>(hub_rng.Below(relations)) : 0;
    fn(hub_id, (*targets)(q % per_hub), rel);
  }
}

}  // namespace

uint64_t RmatOptions::hub_edges() const {
  if (hubs == 0) return 0;
  return static_cast<uint64_t>(
      std::llround(hub_fraction * static_cast<double>(num_nodes())));
}

uint64_t RmatOptions::HubId(uint64_t h) const {
  return RmatIdScrambler(scale, StreamKey(seed, kHubIdStream, 0))(h);
}

absl::Status RmatOptions::Validate() const {
  if (scale < 1 || scale > kMaxScale) {
    return absl::InvalidArgumentError(
        absl::StrCat("--scale must be in [1, ", kMaxScale, "], got ", scale));
  }
  if (edge_factor < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--edge-factor must be >= 1, got ", edge_factor));
  }
  if (edge_factor > (kMaxEdges >> scale)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--edge-factor ", edge_factor, " at --scale ", scale,
                     " exceeds the limit of 2^48 edges (max edge factor ",
                     kMaxEdges >> scale, ")"));
  }
  if (relations < 1 || relations > kMaxRelations) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--relations must be in [1, ", kMaxRelations, "], got ", relations));
  }
  for (double p : {a, b, c}) {
    if (!(p >= 0 && p <= 1)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "R-MAT probabilities a, b, c must each be in [0, 1], got a=", a,
          " b=", b, " c=", c));
    }
  }
  if (a + b + c > 1 + 1e-9) {
    return absl::InvalidArgumentError(absl::StrCat(
        "R-MAT probabilities must satisfy a + b + c <= 1, got ", a + b + c));
  }
  if (chunk_edges < 1 || chunk_edges > kMaxChunkEdges) {
    return absl::InvalidArgumentError(absl::StrCat(
        "chunk_edges must be in [1, ", kMaxChunkEdges, "], got ", chunk_edges));
  }
  if (hubs > num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--hubs must be in [0, 2^scale = ", num_nodes(), "], got ", hubs));
  }
  if (!(hub_fraction > 0 && hub_fraction <= 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hub-fraction must be in (0, 1], got ", hub_fraction));
  }
  if (hubs > 0 && hub_edges() < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hub-fraction ", hub_fraction, " of 2^", scale,
                     " nodes rounds to no edges per hub"));
  }
  if (hubs > 0 && hub_edges() > (kMaxEdges - num_rmat_edges()) / hubs) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hubs ", hubs, " with --hub-fraction ", hub_fraction,
                     " exceeds the limit of 2^48 edges"));
  }
  return absl::OkStatus();
}

uint64_t RmatOptions::chunk_size(uint64_t index) const {
  const uint64_t begin = index * chunk_edges;
  const uint64_t total = num_edges();
  return begin >= total ? 0 : std::min(chunk_edges, total - begin);
}

RmatIdScrambler::RmatIdScrambler(int scale, uint64_t seed)
    : mask_(scale >= 64 ? ~uint64_t{0} : (uint64_t{1} << scale) - 1),
      mul1_(StreamKey(seed, kScrambleStream, 1) | 1),
      mul2_(StreamKey(seed, kScrambleStream, 2) | 1),
      add_(StreamKey(seed, kScrambleStream, 3)),
      shift_(std::max(1, (scale + 1) / 2)) {}

void RmatChunk(const RmatOptions& options, uint64_t chunk_index,
               std::vector<RmatEdge>* out) {
  out->clear();
  out->reserve(options.chunk_size(chunk_index));
  ForEachRmatEdge(options, chunk_index,
                  [out](uint64_t src, uint64_t dst, uint32_t rel) {
                    out->push_back(RmatEdge{src, dst, rel});
                  });
}

void AppendRmatChunkText(const RmatOptions& options, uint64_t chunk_index,
                         std::string* text) {
  const int id_digits = DecimalDigits(options.num_nodes() - 1);
  const bool typed = options.relations > 1;
  const size_t max_line =
      2 * id_digits + 2 + (typed ? 2 + DecimalDigits(options.relations) : 0);
  const size_t old_size = text->size();
  text->resize(old_size + options.chunk_size(chunk_index) * max_line);
  char* p = text->data() + old_size;
  char* const end = text->data() + text->size();
  ForEachRmatEdge(options, chunk_index,
                  [&p, end, typed](uint64_t src, uint64_t dst, uint32_t rel) {
                    p = std::to_chars(p, end, src).ptr;
                    *p++ = '\t';
                    if (typed) {
                      *p++ = 'r';
                      p = std::to_chars(p, end, rel).ptr;
                      *p++ = '\t';
                    }
                    p = std::to_chars(p, end, dst).ptr;
                    *p++ = '\n';
                  });
  text->resize(static_cast<size_t>(p - text->data()));
}

absl::Status GenerateRmat(const RmatOptions& options,
                          const GenOutputOptions& output, GenStats* stats) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = output.Validate(); !s.ok()) return s;
  const absl::Time start = absl::Now();
  absl::StatusOr<std::unique_ptr<GenOutputFile>> file =
      GenOutputFile::Create(output.path, output.overwrite, output.gzip_level);
  if (!file.ok()) return file.status();

  absl::Status s = WriteChunksInOrder(
      options.num_chunks(), options.num_edges(),
      [&options](uint64_t i, std::string* text) {
        AppendRmatChunkText(options, i, text);
      },
      [&options](uint64_t i) { return options.chunk_size(i); }, output,
      "gen rmat", "edges", file->get());
  if (s.ok()) s = (*file)->Commit();
  if (!s.ok()) return s;
  if (stats != nullptr) {
    stats->nodes = options.num_nodes();
    stats->edges = options.num_edges();
    stats->bytes_written = (*file)->bytes_written();
    stats->seconds = absl::ToDoubleSeconds(absl::Now() - start);
  }
  return absl::OkStatus();
}

}  // namespace ember::tools::gen
