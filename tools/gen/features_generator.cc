#include "tools/gen/features_generator.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "partition/line_parser.h"
#include "partition/line_reader.h"
#include "tools/gen/gen_random.h"

namespace ember::tools::gen {
namespace {

constexpr uint64_t kFeatureStream = 0x66656174;  // "feat"
constexpr size_t kChunkBytes = 4 << 20;

// Calls fn(line_no, node, block) for each data line of the labels file.
absl::Status ForEachLabel(
    const std::string& path,
    const std::function<absl::Status(uint64_t, std::string_view, uint64_t)>&
        fn) {
  auto reader = LineReader::Open(path);
  if (!reader.ok()) return reader.status();
  LineChunk chunk;
  while (true) {
    absl::StatusOr<bool> more = (*reader)->Next(&chunk);
    if (!more.ok()) return more.status();
    if (!*more) break;
    std::string_view text = chunk.text;
    uint64_t line_no = chunk.first_line;
    while (!text.empty()) {
      const size_t nl = text.find('\n');
      std::string_view line = text.substr(0, nl);
      text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
      const uint64_t this_line = line_no++;
      if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
      if (IsSkippableLine(line)) continue;
      const size_t tab = line.find('\t');
      std::string_view node = line.substr(0, tab);
      std::string_view block_text =
          tab == std::string_view::npos ? std::string_view() : line.substr(tab + 1);
      uint64_t block = 0;
      auto [ptr, ec] = std::from_chars(
          block_text.data(), block_text.data() + block_text.size(), block);
      RejectReason why;
      if (node.empty() || !ValidateStringId(node, &why) ||
          ec != std::errc() || ptr != block_text.data() + block_text.size() ||
          block_text.empty() || block >= (uint64_t{1} << 48)) {
        return absl::InvalidArgumentError(absl::StrCat(
            path, ":", this_line,
            ": expected <node><TAB><block> with a block number below 2^48"));
      }
      if (absl::Status s = fn(this_line, node, block); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status FeaturesOptions::Validate() const {
  if (vocab < 1 || vocab > 0xffffffffull) {
    return absl::InvalidArgumentError(
        absl::StrCat("--vocab ", vocab, " is outside [1, 2^32-1]"));
  }
  if (!(nnz_alpha > 0) || !std::isfinite(nnz_alpha)) {
    return absl::InvalidArgumentError("nnz_alpha must be a positive number");
  }
  if (max_nnz < 1) return absl::InvalidArgumentError("max_nnz must be >= 1");
  if (!(topic_fraction >= 0 && topic_fraction <= 1)) {
    return absl::InvalidArgumentError("topic_fraction must be in [0, 1]");
  }
  return absl::OkStatus();
}

void FeatureTopic(uint64_t vocab, uint64_t blocks, uint64_t block,
                  uint64_t* begin, uint64_t* size) {
  if (vocab >= blocks) {
    const auto lo = static_cast<uint64_t>(
        static_cast<unsigned __int128>(block) * vocab / blocks);
    const auto hi = static_cast<uint64_t>(
        static_cast<unsigned __int128>(block + 1) * vocab / blocks);
    *begin = lo;
    *size = hi - lo;
  } else {
    *begin = block % vocab;
    *size = 1;
  }
}

uint64_t AppendFeatureLine(const FeaturesOptions& options, uint64_t blocks,
                           uint64_t index, std::string_view node,
                           uint64_t block, std::string* out) {
  Xoshiro256 rng(StreamKey(options.seed, kFeatureStream, index));
  const double u = 1.0 - rng.Uniform();  // (0, 1]
  const double raw = std::floor(std::pow(u, -1.0 / options.nnz_alpha));
  const uint64_t cap = std::min<uint64_t>(options.max_nnz, options.vocab);
  const uint64_t nnz =
      raw >= static_cast<double>(cap) ? cap : std::max<uint64_t>(1, raw);
  uint64_t topic_begin, topic_size;
  FeatureTopic(options.vocab, blocks, block, &topic_begin, &topic_size);

  std::vector<uint64_t> chosen;
  chosen.reserve(nnz);
  for (uint64_t attempt = 0; chosen.size() < nnz && attempt < 8 * nnz + 8;
       ++attempt) {
    uint64_t f;
    if (rng.Uniform() < options.topic_fraction) {
      const double v = rng.Uniform();
      f = topic_begin + std::min<uint64_t>(
                            topic_size - 1,
                            static_cast<uint64_t>(v * v * topic_size));
    } else {
      f = rng.Below(options.vocab);
    }
    if (std::find(chosen.begin(), chosen.end(), f) == chosen.end()) {
      chosen.push_back(f);
    }
  }
  out->append(node);
  for (size_t i = 0; i < chosen.size(); ++i) {
    out->push_back(i == 0 ? '\t' : ' ');
    absl::StrAppend(out, "f", chosen[i]);
    if (rng.Below(2) == 1) {
      const uint64_t k = 1 + rng.Below(8);
      absl::StrAppend(out, ":", absl::StrFormat("%g", k / 4.0));
    }
  }
  out->push_back('\n');
  return chosen.size();
}

absl::Status GenerateFeatures(const FeaturesOptions& options,
                              const std::string& labels_path,
                              const GenOutputOptions& output,
                              GenStats* stats) {
  const auto start = std::chrono::steady_clock::now();
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  if (absl::Status s = output.Validate(); !s.ok()) return s;
  if (labels_path.empty()) {
    return absl::InvalidArgumentError("gen features: --labels FILE is required");
  }
  uint64_t blocks = 0;
  if (absl::Status s = ForEachLabel(
          labels_path,
          [&](uint64_t, std::string_view, uint64_t block) {
            blocks = std::max(blocks, block + 1);
            return absl::OkStatus();
          });
      !s.ok()) {
    return s;
  }
  auto file =
      GenOutputFile::Create(output.path, output.overwrite, output.gzip_level);
  if (!file.ok()) return file.status();
  std::string text;
  uint64_t index = 0, nonzeros = 0;
  auto flush = [&]() -> absl::Status {
    if (text.empty()) return absl::OkStatus();
    if (absl::Status s = (*file)->Encode(&text); !s.ok()) return s;
    absl::Status s = (*file)->Write(text);
    text.clear();
    return s;
  };
  if (absl::Status s = ForEachLabel(
          labels_path,
          [&](uint64_t, std::string_view node, uint64_t block) {
            nonzeros += AppendFeatureLine(options, blocks, index++, node,
                                          block, &text);
            return text.size() >= kChunkBytes ? flush() : absl::OkStatus();
          });
      !s.ok()) {
    return s;
  }
  if (absl::Status s = flush(); !s.ok()) return s;
  if (absl::Status s = (*file)->Commit(); !s.ok()) return s;
  if (stats != nullptr) {
    stats->nodes = index;
    stats->edges = nonzeros;
    stats->bytes_written = (*file)->bytes_written();
    stats->seconds = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - start)
                         .count();
  }
  return absl::OkStatus();
}

}  // namespace ember::tools::gen
