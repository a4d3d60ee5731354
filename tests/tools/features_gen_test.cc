// `ember gen features`: determinism, heavy-tailed non-zeros, block topics.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tools/gen/features_generator.h"
#include "tools/gen/gen_output.h"
#include "tools/gen/sbm_generator.h"

namespace ember::tools::gen {
namespace {

namespace fs = std::filesystem;

class Dir {
 public:
  Dir() {
    std::string tmpl = ::testing::TempDir() + "/ember_featgen_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    EXPECT_NE(::mkdtemp(buf.data()), nullptr);
    path_ = buf.data();
  }
  ~Dir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  std::string Sub(const std::string& n) const { return path_ + "/" + n; }

 private:
  std::string path_;
};

std::string Slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

struct Line {
  std::string node;
  std::vector<uint64_t> features;
  std::vector<float> weights;
};

std::vector<Line> ParseLines(const std::string& text) {
  std::vector<Line> out;
  for (absl::string_view l : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(l, '\t');
    EXPECT_EQ(parts.size(), 2u) << l;
    Line line;
    line.node = std::string(parts[0]);
    for (absl::string_view tok : absl::StrSplit(parts[1], ' ')) {
      float w = 1;
      size_t colon = tok.find(':');
      if (colon != absl::string_view::npos) {
        EXPECT_TRUE(absl::SimpleAtof(tok.substr(colon + 1), &w)) << tok;
        tok = tok.substr(0, colon);
      }
      EXPECT_EQ(tok[0], 'f');
      uint64_t id;
      EXPECT_TRUE(absl::SimpleAtoi(tok.substr(1), &id)) << tok;
      line.features.push_back(id);
      line.weights.push_back(w);
    }
    out.push_back(std::move(line));
  }
  return out;
}

// An sbm labels file with `nodes` nodes in `blocks` blocks.
std::string MakeLabels(const Dir& dir, uint64_t nodes, uint64_t blocks) {
  SbmOptions sbm;
  sbm.nodes = nodes;
  sbm.blocks = blocks;
  sbm.avg_degree = 2;
  GenOutputOptions out;
  out.path = dir.Sub("edges.tsv");
  out.threads = 1;
  EXPECT_TRUE(GenerateSbm(sbm, out, dir.Sub("labels.tsv")).ok());
  return dir.Sub("labels.tsv");
}

absl::Status Gen(const FeaturesOptions& o, const std::string& labels,
                 const std::string& path, GenStats* stats = nullptr) {
  GenOutputOptions out;
  out.path = path;
  out.overwrite = true;
  return GenerateFeatures(o, labels, out, stats);
}

TEST(FeaturesGenTest, DeterministicBySeed) {
  Dir dir;
  const std::string labels = MakeLabels(dir, 2000, 8);
  FeaturesOptions o;
  o.vocab = 10000;
  o.seed = 11;
  ASSERT_TRUE(Gen(o, labels, dir.Sub("a.tsv")).ok());
  ASSERT_TRUE(Gen(o, labels, dir.Sub("b.tsv")).ok());
  EXPECT_EQ(Slurp(dir.Sub("a.tsv")), Slurp(dir.Sub("b.tsv")));
  o.seed = 12;
  ASSERT_TRUE(Gen(o, labels, dir.Sub("c.tsv")).ok());
  EXPECT_NE(Slurp(dir.Sub("a.tsv")), Slurp(dir.Sub("c.tsv")));
  // gzip output decompresses to the same text (checked via gunzip).
  o.seed = 11;
  ASSERT_TRUE(Gen(o, labels, dir.Sub("a.tsv.gz")).ok());
  const std::string cmd = "gunzip -c " + dir.Sub("a.tsv.gz") + " > " + dir.Sub("a2.tsv");
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(Slurp(dir.Sub("a.tsv")), Slurp(dir.Sub("a2.tsv")));
}

TEST(FeaturesGenTest, HeavyTailedBlockCorrelatedWithinVocab) {
  Dir dir;
  const uint64_t kNodes = 20000, kBlocks = 10;
  const std::string labels = MakeLabels(dir, kNodes, kBlocks);
  FeaturesOptions o;
  o.vocab = 100000;
  o.seed = 1;
  GenStats stats;
  ASSERT_TRUE(Gen(o, labels, dir.Sub("f.tsv"), &stats).ok());
  std::vector<Line> lines = ParseLines(Slurp(dir.Sub("f.tsv")));
  ASSERT_EQ(lines.size(), kNodes);
  EXPECT_EQ(stats.nodes, kNodes);

  std::vector<uint64_t> nnz;
  uint64_t total = 0, in_topic = 0;
  bool weights_vary = false;
  for (uint64_t i = 0; i < kNodes; ++i) {
    const Line& l = lines[i];
    EXPECT_EQ(l.node, std::to_string(i));  // labels order
    nnz.push_back(l.features.size());
    total += l.features.size();
    std::set<uint64_t> distinct(l.features.begin(), l.features.end());
    EXPECT_EQ(distinct.size(), l.features.size()) << "node " << i;
    uint64_t begin, size;
    FeatureTopic(o.vocab, kBlocks, i % kBlocks, &begin, &size);
    for (size_t k = 0; k < l.features.size(); ++k) {
      EXPECT_LT(l.features[k], o.vocab);
      in_topic += l.features[k] >= begin && l.features[k] < begin + size;
      EXPECT_GT(l.weights[k], 0);
      weights_vary |= l.weights[k] != 1.0f;
    }
  }
  EXPECT_EQ(stats.edges, total);
  EXPECT_TRUE(weights_vary);
  std::sort(nnz.begin(), nnz.end());
  const uint64_t median = nnz[nnz.size() / 2], max = nnz.back();
  EXPECT_GE(nnz.front(), 1u);
  EXPECT_LE(max, 4096u);
  EXPECT_LE(median, 3u);
  EXPECT_GE(max, 500u);  // P(nnz >= 500) ~ 5.8e-4 per node, 20000 nodes
  EXPECT_GE(max, 100 * median);
  // 80% from the topic plus ~10% of the uniform draws landing in it.
  const double frac = static_cast<double>(in_topic) / total;
  EXPECT_GT(frac, 0.75);
  EXPECT_LT(frac, 0.9);
}

TEST(FeaturesGenTest, SmallVocabularyIsRespected) {
  Dir dir;
  const std::string labels = MakeLabels(dir, 3000, 20);
  FeaturesOptions o;
  o.vocab = 7;  // fewer features than blocks
  ASSERT_TRUE(Gen(o, labels, dir.Sub("f.tsv")).ok());
  for (const Line& l : ParseLines(Slurp(dir.Sub("f.tsv")))) {
    EXPECT_GE(l.features.size(), 1u);
    EXPECT_LE(l.features.size(), 7u);
    for (uint64_t f : l.features) EXPECT_LT(f, 7u);
  }
}

TEST(FeaturesGenTest, BadInputs) {
  Dir dir;
  FeaturesOptions o;
  o.vocab = 0;
  EXPECT_TRUE(absl::IsInvalidArgument(Gen(o, dir.Sub("none"), dir.Sub("f.tsv"))));
  o.vocab = 10;
  EXPECT_FALSE(Gen(o, dir.Sub("none"), dir.Sub("f.tsv")).ok());
  EXPECT_TRUE(absl::IsInvalidArgument(Gen(o, "", dir.Sub("f.tsv"))));
  WriteText(dir.Sub("labels.tsv"), "a\t0\nb\tx\n");
  absl::Status s = Gen(o, dir.Sub("labels.tsv"), dir.Sub("f.tsv"));
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(std::string(s.message()).find("labels.tsv:2:"), std::string::npos) << s;
  EXPECT_FALSE(fs::exists(dir.Sub("f.tsv")));
  // Existing output without overwrite is left alone.
  WriteText(dir.Sub("labels.tsv"), "a\t0\nb\t1\n");
  WriteText(dir.Sub("f.tsv"), "old");
  GenOutputOptions out;
  out.path = dir.Sub("f.tsv");
  EXPECT_FALSE(GenerateFeatures(o, dir.Sub("labels.tsv"), out).ok());
  EXPECT_EQ(Slurp(dir.Sub("f.tsv")), "old");
}

}  // namespace
}  // namespace ember::tools::gen
