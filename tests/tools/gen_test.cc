// Tests for the synthetic graph generators (tools/gen/rmat_generator.h,
// tools/gen/sbm_generator.h, tools/gen/gen_output.h) and one `ember gen` smoke test.
#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_process.h"
#include "tests/tools/gen_test_util.h"
#include "tools/gen/gen_output.h"
#include "tools/gen/rmat_generator.h"
#include "tools/gen/sbm_generator.h"

namespace ember::tools::gen {
namespace {

using ::ember::testing::GenOutputTo;
using ::ember::testing::TabRows;
using ::testing::HasSubstr;

// A fresh directory per test, removed (shallowly) at the end.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "/ember_gen_test_XXXXXX";
    char* d = ::mkdtemp(tmpl.data());
    EXPECT_NE(d, nullptr) << "mkdtemp failed for " << tmpl;
    path_ = tmpl;
  }
  ~TempDir() {
    for (const std::string& f : Files()) ::unlink((path_ + "/" + f).c_str());
    ::rmdir(path_.c_str());
  }
  std::string File(const std::string& name) const { return path_ + "/" + name; }
  std::vector<std::string> Files() const {
    std::vector<std::string> out;
    if (DIR* dir = ::opendir(path_.c_str())) {
      while (dirent* e = ::readdir(dir)) {
        std::string n = e->d_name;
        if (n != "." && n != "..") out.push_back(n);
      }
      ::closedir(dir);
    }
    std::sort(out.begin(), out.end());
    return out;
  }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFile(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string GunzipFile(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr) return "";
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(f, buf, sizeof(buf))) > 0) out.append(buf, n);
  EXPECT_EQ(n, 0) << "gzread error on " << path;
  gzclose(f);
  return out;
}

// Small multi-chunk R-MAT options, cheap under sanitizers.
RmatOptions SmallRmat() {
  RmatOptions o;
  o.scale = 10;
  o.edge_factor = 8;     // 8192 edges
  o.chunk_edges = 1000;  // 9 chunks, the last one short
  o.seed = 42;
  return o;
}

std::vector<RmatEdge> AllRmatEdges(const RmatOptions& o) {
  std::vector<RmatEdge> all, chunk;
  for (uint64_t c = 0; c < o.num_chunks(); ++c) {
    RmatChunk(o, c, &chunk);
    EXPECT_EQ(chunk.size(), o.chunk_size(c));
    all.insert(all.end(), chunk.begin(), chunk.end());
  }
  return all;
}

// ---------------------------------------------------------------- R-MAT ---

TEST(RmatTest, SameSeedSameBytesDifferentSeedDifferent) {
  TempDir dir;
  RmatOptions o = SmallRmat();
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("a.tsv"))).ok());
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("b.tsv"))).ok());
  o.seed = 43;
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("c.tsv"))).ok());
  const std::string a = ReadFile(dir.File("a.tsv"));
  EXPECT_FALSE(a.empty());
  EXPECT_EQ(a, ReadFile(dir.File("b.tsv")));
  EXPECT_NE(a, ReadFile(dir.File("c.tsv")));
}

TEST(RmatTest, ThreadCountDoesNotChangeOutput) {
  TempDir dir;
  const RmatOptions o = SmallRmat();
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("t1.tsv"), 1)).ok());
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("t2.tsv"), 2)).ok());
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("t4.tsv"), 4)).ok());
  const std::string t1 = ReadFile(dir.File("t1.tsv"));
  EXPECT_EQ(t1, ReadFile(dir.File("t2.tsv")));
  EXPECT_EQ(t1, ReadFile(dir.File("t4.tsv")));
  // No temporaries are left behind; each output has its record.
  EXPECT_EQ(dir.Files(),
            (std::vector<std::string>{".t1.tsv.ember-made", ".t2.tsv.ember-made",
                                      ".t4.tsv.ember-made", "t1.tsv", "t2.tsv", "t4.tsv"}));
}

TEST(RmatTest, FileMatchesChunksExactCountAndRange) {
  TempDir dir;
  const RmatOptions o = SmallRmat();
  GenStats stats;
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("g.tsv")), &stats).ok());
  EXPECT_EQ(stats.nodes, 1024u);
  EXPECT_EQ(stats.edges, 8192u);
  const std::string text = ReadFile(dir.File("g.tsv"));
  EXPECT_EQ(stats.bytes_written, text.size());
  const auto rows = TabRows(text);
  const std::vector<RmatEdge> edges = AllRmatEdges(o);
  ASSERT_EQ(rows.size(), 8192u);
  ASSERT_EQ(edges.size(), 8192u);
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 2u) << "line " << i;
    EXPECT_EQ(std::stoull(rows[i][0]), edges[i].src) << "line " << i;
    EXPECT_EQ(std::stoull(rows[i][1]), edges[i].dst) << "line " << i;
    EXPECT_LT(edges[i].src, 1024u);
    EXPECT_LT(edges[i].dst, 1024u);
  }
}

TEST(RmatTest, DegreeIsSkewed) {
  RmatOptions o;
  o.scale = 12;
  o.edge_factor = 16;
  o.seed = 7;
  std::vector<uint64_t> degree(o.num_nodes());
  for (const RmatEdge& e : AllRmatEdges(o)) {
    ASSERT_LT(e.src, o.num_nodes());
    ASSERT_LT(e.dst, o.num_nodes());
    ++degree[e.src];
    ++degree[e.dst];
  }
  const double mean = 2.0 * o.num_edges() / o.num_nodes();  // 32
  const uint64_t max = *std::max_element(degree.begin(), degree.end());
  EXPECT_GT(static_cast<double>(max), 10 * mean) << "max degree " << max;
  // Scrambling spreads the hubs: the top-degree node is not id 0.
  EXPECT_NE(std::max_element(degree.begin(), degree.end()) - degree.begin(), 0);
}

TEST(RmatTest, QuadrantFrequenciesMatchProbabilities) {
  RmatOptions o;
  o.scale = 12;
  o.edge_factor = 64;  // 262144 edges: binomial sd of a frequency < 0.001
  o.scramble = false;
  o.seed = 3;
  uint64_t count[4] = {0, 0, 0, 0};
  uint64_t level_count[4] = {0, 0, 0, 0};
  const std::vector<RmatEdge> edges = AllRmatEdges(o);
  for (const RmatEdge& e : edges) {
    const int top = o.scale - 1;
    ++count[((e.src >> top) & 1) * 2 + ((e.dst >> top) & 1)];
    for (int l = 0; l < o.scale; ++l) {  // every level is drawn the same way
      ++level_count[((e.src >> l) & 1) * 2 + ((e.dst >> l) & 1)];
    }
  }
  const double expected[4] = {0.57, 0.19, 0.19, 0.05};
  for (int q = 0; q < 4; ++q) {
    EXPECT_NEAR(static_cast<double>(count[q]) / edges.size(), expected[q],
                0.005)
        << "top-level quadrant " << q;
    EXPECT_NEAR(static_cast<double>(level_count[q]) / (edges.size() * o.scale),
                expected[q], 0.002)
        << "all-levels quadrant " << q;
  }
}

TEST(RmatTest, ScrambledEdgesAreScrambledRawEdges) {
  RmatOptions o = SmallRmat();
  RmatOptions raw = o;
  raw.scramble = false;
  const RmatIdScrambler scramble(o.scale, o.seed);
  std::vector<RmatEdge> a, b;
  RmatChunk(o, 3, &a);
  RmatChunk(raw, 3, &b);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].src, scramble(b[i].src));
    EXPECT_EQ(a[i].dst, scramble(b[i].dst));
  }
}

TEST(RmatTest, ScramblerIsABijection) {
  for (int scale = 1; scale <= 16; ++scale) {
    for (uint64_t seed : {0ull, 1ull, 123456789ull}) {
      const RmatIdScrambler scramble(scale, seed);
      const uint64_t n = uint64_t{1} << scale;
      std::vector<bool> seen(n, false);
      for (uint64_t id = 0; id < n; ++id) {
        const uint64_t s = scramble(id);
        ASSERT_LT(s, n) << "scale " << scale << " id " << id;
        ASSERT_FALSE(seen[s]) << "scale " << scale << " collision at " << s;
        seen[s] = true;
      }
    }
  }
  // Large scales stay in range.
  const RmatIdScrambler s40(40, 9);
  for (uint64_t id : {0ull, 1ull, (1ull << 40) - 1, 123456789012ull}) {
    EXPECT_LT(s40(id), 1ull << 40);
  }
}

TEST(RmatTest, GzipOutputDecompressesToPlainOutput) {
  TempDir dir;
  const RmatOptions o = SmallRmat();
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("g.tsv"))).ok());
  GenStats stats;
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("g.tsv.gz")), &stats).ok());
  const std::string plain = ReadFile(dir.File("g.tsv"));
  const std::string gz = ReadFile(dir.File("g.tsv.gz"));
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(gz[0]), 0x1f);  // gzip magic
  EXPECT_EQ(static_cast<unsigned char>(gz[1]), 0x8b);
  EXPECT_LT(gz.size(), plain.size());
  EXPECT_EQ(stats.bytes_written, gz.size());
  EXPECT_EQ(GunzipFile(dir.File("g.tsv.gz")), plain);
}

TEST(RmatTest, RelationsWriteThreeColumns) {
  TempDir dir;
  RmatOptions o = SmallRmat();
  o.relations = 5;
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("r.tsv"))).ok());
  const auto rows = TabRows(ReadFile(dir.File("r.tsv")));
  ASSERT_EQ(rows.size(), o.num_edges());
  std::map<std::string, int> names;
  for (const auto& row : rows) {
    ASSERT_EQ(row.size(), 3u);
    ++names[row[1]];
    EXPECT_LT(std::stoull(row[0]), o.num_nodes());
    EXPECT_LT(std::stoull(row[2]), o.num_nodes());
  }
  ASSERT_EQ(names.size(), 5u);
  for (int r = 0; r < 5; ++r) {
    const std::string name = "r" + std::to_string(r);
    ASSERT_TRUE(names.count(name)) << name;
    // Uniform: 8192 / 5 ~ 1638 each.
    EXPECT_NEAR(names[name], 8192.0 / 5, 200) << name;
  }
  // Relations do not change the (src, dst) stream's shape; they draw extra
  // random numbers, so only the count is compared.
}

TEST(RmatTest, HubsLinkToTheirShareOfDistinctNodes) {
  RmatOptions o = SmallRmat();  // 1024 nodes, 8192 R-MAT edges
  o.hubs = 3;
  o.hub_fraction = 0.1;  // 102 edges per hub; hub edges start mid-chunk
  ASSERT_TRUE(o.Validate().ok());
  EXPECT_EQ(o.hub_edges(), 102u);
  EXPECT_EQ(o.num_edges(), 8192u + 3 * 102);
  const std::vector<RmatEdge> edges = AllRmatEdges(o);
  ASSERT_EQ(edges.size(), o.num_edges());

  // The R-MAT part is unchanged by hubs.
  const std::vector<RmatEdge> plain = AllRmatEdges(SmallRmat());
  for (size_t i = 0; i < plain.size(); ++i) {
    ASSERT_EQ(edges[i].src, plain[i].src) << i;
    ASSERT_EQ(edges[i].dst, plain[i].dst) << i;
  }
  std::set<uint64_t> hub_ids;
  for (uint64_t h = 0; h < o.hubs; ++h) {
    hub_ids.insert(o.HubId(h));
    std::set<uint64_t> targets;
    for (uint64_t j = 0; j < o.hub_edges(); ++j) {
      const RmatEdge& e = edges[plain.size() + h * o.hub_edges() + j];
      EXPECT_EQ(e.src, o.HubId(h));
      ASSERT_LT(e.dst, o.num_nodes());
      targets.insert(e.dst);
    }
    EXPECT_EQ(targets.size(), o.hub_edges()) << "hub " << h;
  }
  EXPECT_EQ(hub_ids.size(), 3u);

  // Each hub's degree is far above the mean and at least its share.
  std::vector<uint64_t> degree(o.num_nodes(), 0);
  for (const RmatEdge& e : edges) {
    ++degree[e.src];
    ++degree[e.dst];
  }
  const double mean = 2.0 * edges.size() / o.num_nodes();
  for (uint64_t id : hub_ids) {
    EXPECT_GE(degree[id], o.hub_edges());
    EXPECT_GT(static_cast<double>(degree[id]), 5 * mean) << "hub " << id;
  }

  TempDir dir;
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("h1.tsv"), 1)).ok());
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("h3.tsv"), 3)).ok());
  EXPECT_EQ(ReadFile(dir.File("h1.tsv")), ReadFile(dir.File("h3.tsv")));
  EXPECT_EQ(TabRows(ReadFile(dir.File("h1.tsv"))).size(), o.num_edges());
}

TEST(RmatTest, BadOptionsAreInvalidArgument) {
  struct Case {
    void (*mutate)(RmatOptions*);
    const char* message;
  };
  const Case cases[] = {
      {[](RmatOptions* o) { o->scale = 0; }, "--scale"},
      {[](RmatOptions* o) { o->scale = 41; }, "--scale"},
      {[](RmatOptions* o) { o->edge_factor = 0; }, "--edge-factor"},
      {[](RmatOptions* o) {
         o->scale = 40;
         o->edge_factor = 1 << 10;
       },
       "2^48"},
      {[](RmatOptions* o) { o->relations = 0; }, "--relations"},
      {[](RmatOptions* o) { o->a = 0.9; }, "a + b + c"},
      {[](RmatOptions* o) { o->b = -0.1; }, "[0, 1]"},
      {[](RmatOptions* o) { o->chunk_edges = 0; }, "chunk_edges"},
      {[](RmatOptions* o) { o->hubs = 1025; }, "--hubs"},
      {[](RmatOptions* o) {
         o->hubs = 1;
         o->hub_fraction = 0;
       },
       "--hub-fraction"},
      {[](RmatOptions* o) {
         o->hubs = 1;
         o->hub_fraction = 1e-4;
       },
       "no edges per hub"},
  };
  TempDir dir;
  for (const Case& c : cases) {
    RmatOptions o = SmallRmat();
    c.mutate(&o);
    const absl::Status s = o.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    EXPECT_EQ(GenerateRmat(o, GenOutputTo(dir.File("x.tsv"))).code(),
              absl::StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(dir.Files().empty());
  const absl::Status no_out = GenerateRmat(SmallRmat(), GenOutputOptions());
  EXPECT_EQ(no_out.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_out.message()), HasSubstr("--out"));
}

// ----------------------------------------------------------- gen output ---

TEST(GenOutputTest, ExistingOutputNeedsOverwrite) {
  TempDir dir;
  const std::string path = dir.File("g.tsv");
  WriteFile(path, "precious\n");
  const absl::Status s = GenerateRmat(SmallRmat(), GenOutputTo(path));
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_THAT(std::string(s.message()), HasSubstr(path));
  EXPECT_THAT(std::string(s.message()), HasSubstr("--overwrite"));
  EXPECT_EQ(ReadFile(path), "precious\n");
  EXPECT_EQ(dir.Files(), std::vector<std::string>{"g.tsv"});

  // --overwrite replaces only what ember made: not the user's file, but
  // gen's own output once the user's is gone.
  GenOutputOptions out = GenOutputTo(path);
  out.overwrite = true;
  const absl::Status theirs = GenerateRmat(SmallRmat(), out);
  EXPECT_EQ(theirs.code(), absl::StatusCode::kFailedPrecondition) << theirs;
  EXPECT_THAT(std::string(theirs.message()), HasSubstr("not made by ember"));
  EXPECT_EQ(ReadFile(path), "precious\n");
  std::filesystem::remove(path);
  ASSERT_TRUE(GenerateRmat(SmallRmat(), GenOutputTo(path)).ok());
  ASSERT_TRUE(GenerateRmat(SmallRmat(), out).ok());
  EXPECT_EQ(TabRows(ReadFile(path)).size(), SmallRmat().num_edges());
  EXPECT_EQ(dir.Files(), (std::vector<std::string>{".g.tsv.ember-made", "g.tsv"}));
}

TEST(GenOutputTest, FileAppearingDuringRunIsNotClobbered) {
  TempDir dir;
  const std::string path = dir.File("g.tsv");
  auto file = GenOutputFile::Create(path, /*overwrite=*/false, 1);
  ASSERT_TRUE(file.ok()) << file.status();
  ASSERT_TRUE((*file)->Write("1\t2\n").ok());
  WriteFile(path, "someone else\n");
  EXPECT_EQ((*file)->Commit().code(), absl::StatusCode::kAlreadyExists);
  file->reset();  // abandons the temporary
  EXPECT_EQ(ReadFile(path), "someone else\n");
  EXPECT_EQ(dir.Files(), std::vector<std::string>{"g.tsv"});
}

TEST(GenOutputTest, UncommittedFileLeavesNothing) {
  TempDir dir;
  {
    auto file = GenOutputFile::Create(dir.File("g.tsv"), false, 1);
    ASSERT_TRUE(file.ok());
    ASSERT_TRUE((*file)->Write("half a line").ok());
    EXPECT_EQ(dir.Files().size(), 1u);  // the temporary
  }
  EXPECT_TRUE(dir.Files().empty());
}

TEST(GenOutputTest, UnwritableDirectoryNamesThePath) {
  TempDir dir;
  const std::string path = dir.File("no/such/dir/g.tsv");
  const absl::Status s = GenerateRmat(SmallRmat(), GenOutputTo(path));
  EXPECT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("no/such/dir/g.tsv"));
}

// ------------------------------------------------------------------ SBM ---

SbmOptions SmallSbm() {
  SbmOptions o;
  o.nodes = 2003;  // blocks of 201 and 200 nodes
  o.blocks = 10;
  o.avg_degree = 20;  // 20030 edges
  o.mixing = 0.2;
  o.seed = 5;
  o.chunk_edges = 3000;  // 7 chunks
  return o;
}

std::vector<std::pair<uint64_t, uint64_t>> AllSbmEdges(const SbmOptions& o) {
  std::vector<std::pair<uint64_t, uint64_t>> all, chunk;
  for (uint64_t c = 0; c < o.num_chunks(); ++c) {
    SbmChunk(o, c, &chunk);
    EXPECT_EQ(chunk.size(), o.chunk_size(c));
    all.insert(all.end(), chunk.begin(), chunk.end());
  }
  return all;
}

TEST(SbmTest, EdgesCountNoSelfLoopsAndMixing) {
  SbmOptions o = SmallSbm();
  o.nodes = 20000;
  o.avg_degree = 10;  // 100000 edges: sd of the mixing fraction ~0.0013
  o.chunk_edges = 1 << 14;
  const auto edges = AllSbmEdges(o);
  ASSERT_EQ(edges.size(), 100000u);
  uint64_t inter = 0;
  for (const auto& [src, dst] : edges) {
    ASSERT_LT(src, o.nodes);
    ASSERT_LT(dst, o.nodes);
    ASSERT_NE(src, dst);
    inter += o.block_of(src) != o.block_of(dst);
  }
  EXPECT_NEAR(static_cast<double>(inter) / edges.size(), o.mixing, 0.01);
}

TEST(SbmTest, ExtremeMixing) {
  for (double m : {0.0, 1.0}) {
    SbmOptions o = SmallSbm();
    o.mixing = m;
    for (const auto& [src, dst] : AllSbmEdges(o)) {
      ASSERT_NE(src, dst);
      ASSERT_EQ(o.block_of(src) != o.block_of(dst), m == 1.0)
          << src << " " << dst;
    }
  }
}

TEST(SbmTest, DestinationsAreUniform) {
  // Uneven blocks (7 nodes, 3 blocks: sizes 3, 2, 2) exercise the partial
  // last row of the destination enumeration.
  for (double m : {0.0, 1.0}) {
    SbmOptions o;
    o.nodes = 7;
    o.blocks = 3;
    o.avg_degree = 20000;  // 70000 edges
    o.mixing = m;
    o.seed = 11;
    // count[src block][dst] over the edges.
    std::map<uint64_t, std::map<uint64_t, int>> count;
    for (const auto& [src, dst] : AllSbmEdges(o)) ++count[o.block_of(src)][dst];
    for (auto& [block, dsts] : count) {
      const uint64_t block_size = block == 0 ? 3 : 2;
      const uint64_t targets = m == 0 ? block_size : o.nodes - block_size;
      EXPECT_EQ(dsts.size(), targets) << "block " << block;
      int total = 0;
      for (auto& [dst, n] : dsts) total += n;
      for (auto& [dst, n] : dsts) {
        EXPECT_NEAR(n, static_cast<double>(total) / targets,
                    0.06 * total / targets)
            << "mixing " << m << " block " << block << " dst " << dst;
      }
    }
  }
}

TEST(SbmTest, FilesDeterministicThreadIndependentAndLabelled) {
  TempDir dir;
  const SbmOptions o = SmallSbm();
  GenStats stats;
  ASSERT_TRUE(GenerateSbm(o, GenOutputTo(dir.File("a.tsv"), 1),
                          dir.File("a.labels"), &stats)
                  .ok());
  EXPECT_EQ(stats.edges, 20030u);
  ASSERT_TRUE(
      GenerateSbm(o, GenOutputTo(dir.File("b.tsv"), 2), dir.File("b.labels"))
          .ok());
  SbmOptions other = o;
  other.seed = 6;
  ASSERT_TRUE(
      GenerateSbm(other, GenOutputTo(dir.File("c.tsv")), dir.File("c.labels"))
          .ok());
  const std::string a = ReadFile(dir.File("a.tsv"));
  EXPECT_EQ(a, ReadFile(dir.File("b.tsv")));
  EXPECT_NE(a, ReadFile(dir.File("c.tsv")));

  const auto rows = TabRows(a);
  const auto edges = AllSbmEdges(o);
  ASSERT_EQ(rows.size(), edges.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    ASSERT_EQ(rows[i].size(), 2u);
    EXPECT_EQ(std::stoull(rows[i][0]), edges[i].first);
    EXPECT_EQ(std::stoull(rows[i][1]), edges[i].second);
  }

  const auto labels = TabRows(ReadFile(dir.File("a.labels")));
  ASSERT_EQ(labels.size(), o.nodes);
  for (uint64_t i = 0; i < o.nodes; ++i) {
    ASSERT_EQ(labels[i].size(), 2u);
    EXPECT_EQ(std::stoull(labels[i][0]), i);
    const uint64_t block = std::stoull(labels[i][1]);
    EXPECT_LT(block, o.blocks);
    EXPECT_EQ(block, o.block_of(i));
  }
  EXPECT_EQ(ReadFile(dir.File("a.labels")), ReadFile(dir.File("c.labels")));
}

TEST(SbmTest, GzipBothFiles) {
  TempDir dir;
  const SbmOptions o = SmallSbm();
  ASSERT_TRUE(
      GenerateSbm(o, GenOutputTo(dir.File("g.tsv")), dir.File("l.tsv")).ok());
  ASSERT_TRUE(
      GenerateSbm(o, GenOutputTo(dir.File("g.tsv.gz")), dir.File("l.tsv.gz"))
          .ok());
  EXPECT_EQ(GunzipFile(dir.File("g.tsv.gz")), ReadFile(dir.File("g.tsv")));
  EXPECT_EQ(GunzipFile(dir.File("l.tsv.gz")), ReadFile(dir.File("l.tsv")));
}

TEST(SbmTest, ExistingLabelsFileBlocksBothOutputs) {
  TempDir dir;
  WriteFile(dir.File("l.tsv"), "keep\n");
  const absl::Status s = GenerateSbm(SmallSbm(), GenOutputTo(dir.File("g.tsv")),
                                     dir.File("l.tsv"));
  EXPECT_EQ(s.code(), absl::StatusCode::kAlreadyExists);
  EXPECT_EQ(ReadFile(dir.File("l.tsv")), "keep\n");
  EXPECT_EQ(dir.Files(), std::vector<std::string>{"l.tsv"});
}

TEST(SbmTest, BadOptionsAreInvalidArgument) {
  struct Case {
    void (*mutate)(SbmOptions*);
    const char* message;
  };
  const Case cases[] = {
      {[](SbmOptions* o) { o->nodes = 1; }, "--nodes"},
      {[](SbmOptions* o) { o->blocks = 0; }, "--blocks"},
      {[](SbmOptions* o) { o->blocks = 5000; }, "--blocks"},
      {[](SbmOptions* o) { o->mixing = 1.5; }, "--mixing"},
      {[](SbmOptions* o) { o->mixing = -0.1; }, "--mixing"},
      {[](SbmOptions* o) { o->blocks = 1; }, "--blocks >= 2"},
      {[](SbmOptions* o) { o->blocks = 1500; }, "2 nodes per block"},
      {[](SbmOptions* o) { o->avg_degree = 0; }, "--avg-degree"},
      {[](SbmOptions* o) { o->avg_degree = 0.0001; }, "no edges"},
      {[](SbmOptions* o) { o->chunk_edges = 0; }, "chunk_edges"},
  };
  TempDir dir;
  for (const Case& c : cases) {
    SbmOptions o = SmallSbm();
    c.mutate(&o);
    const absl::Status s = o.Validate();
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
    EXPECT_EQ(
        GenerateSbm(o, GenOutputTo(dir.File("x.tsv")), dir.File("x.labels"))
            .code(),
        absl::StatusCode::kInvalidArgument);
  }
  // One block with mixing 0 is fine.
  SbmOptions one = SmallSbm();
  one.blocks = 1;
  one.mixing = 0;
  EXPECT_TRUE(one.Validate().ok());

  const absl::Status no_labels =
      GenerateSbm(SmallSbm(), GenOutputTo(dir.File("x.tsv")), "");
  EXPECT_EQ(no_labels.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(no_labels.message()), HasSubstr("--labels-out"));
  EXPECT_TRUE(dir.Files().empty());
}

// ------------------------------------------------------------------ CLI ---

using ::ember::testing::RunShell;

TEST(GenCliTest, RmatAndSbmSmoke) {
  TempDir dir;
  const std::string bin = EMBER_BINARY;
  ASSERT_EQ(::access(bin.c_str(), X_OK), 0)
      << bin << " is missing: build the `ember` target before tools_test";
  const std::string out = dir.File("cli.tsv");
  ASSERT_EQ(RunShell(bin +
                       " gen rmat --scale 6 --edge_factor 2 --seed 1 "
                       "--threads 2 --quiet --out " +
                       out),
            0);
  RmatOptions o;
  o.scale = 6;
  o.edge_factor = 2;
  o.seed = 1;
  ASSERT_TRUE(GenerateRmat(o, GenOutputTo(dir.File("lib.tsv"))).ok());
  EXPECT_EQ(ReadFile(out), ReadFile(dir.File("lib.tsv")));
  // Existing output without --overwrite: non-zero exit, file untouched.
  EXPECT_NE(RunShell(bin + " gen rmat --scale 6 --quiet --out " + out +
                       " 2>/dev/null"),
            0);
  EXPECT_EQ(ReadFile(out), ReadFile(dir.File("lib.tsv")));

  ASSERT_EQ(RunShell(bin +
                     " gen rmat --scale 8 --edge-factor 4 --hubs 2 "
                     "--hub-fraction 0.5 --quiet --out " +
                     dir.File("hubs.tsv")),
            0);
  EXPECT_EQ(TabRows(ReadFile(dir.File("hubs.tsv"))).size(), 1024u + 2 * 128);

  ASSERT_EQ(
      RunShell(bin +
                 " gen sbm --nodes 100 --blocks 4 --avg_degree 6 "
                 "--mixing 0.1 --quiet --out " +
                 dir.File("s.tsv") + " --labels_out " + dir.File("s.labels")),
      0);
  EXPECT_EQ(TabRows(ReadFile(dir.File("s.tsv"))).size(), 300u);
  EXPECT_EQ(TabRows(ReadFile(dir.File("s.labels"))).size(), 100u);
  EXPECT_NE(RunShell(bin + " gen nosuch --quiet --out " + dir.File("n") +
                       " 2>/dev/null"),
            0);
}

}  // namespace
}  // namespace ember::tools::gen
