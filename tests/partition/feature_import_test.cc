// `ember import --node-features`: features round-trip through the graph.
#include <zlib.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "partition/feature_import.h"
#include "partition/importer.h"
#include "partition/node_slots.h"
#include "partition/record_file.h"
#include "storage/graph.h"
#include "storage/graph_builder.h"
#include "storage/internal/keys.h"
#include "storage/base/node_hash.h"
#include "tests/partition/test_util.h"
#include "tools/gen/features_generator.h"
#include "tools/gen/sbm_generator.h"

namespace ember::import_test {
namespace {

// node name -> feature name -> weight.
using FeatureMap = std::map<std::string, std::map<std::string, float>>;

// Reads every node's features back through Graph, names via the vocab blob.
FeatureMap ReadGraphFeatures(const Graph& g) {
  FeatureMap out;
  absl::StatusOr<std::string> blob = g.ReadBlob(kFeatureVocabBlob);
  EXPECT_TRUE(blob.ok()) << blob.status();
  std::vector<std::string> vocab;
  for (absl::string_view name : absl::StrSplit(*blob, '\n', absl::SkipEmpty())) {
    vocab.emplace_back(name);
  }
  EXPECT_EQ(vocab.size(), g.manifest().num_features);
  for (uint32_t p = 0; p < g.manifest().num_partitions; ++p) {
    std::vector<std::string> names(g.manifest().partition_sizes[p]);
    EXPECT_TRUE(g.ForEachNodeName(p, [&](uint32_t o, std::string_view n) {
                   names[o] = std::string(n);
                   return absl::OkStatus();
                 }).ok());
    std::vector<uint64_t> row_start;
    std::vector<FeatureEntry> entries;
    EXPECT_TRUE(g.ReadPartitionFeatures(p, &row_start, &entries).ok());
    EXPECT_EQ(row_start.size(), names.size() + 1);
    uint64_t visited = 0;
    absl::Status s = g.ForEachNodeFeatures(
        p, [&](uint32_t o, std::span<const FeatureEntry> list) {
          ++visited;
          EXPECT_FALSE(list.empty());
          // The CSR form holds the same entries.
          EXPECT_EQ(row_start[o + 1] - row_start[o], list.size());
          for (size_t i = 0; i < list.size(); ++i) {
            EXPECT_EQ(entries[row_start[o] + i], list[i]);
            if (i > 0) {
              EXPECT_LT(list[i - 1].feature, list[i].feature);
            }
            EXPECT_LT(list[i].feature, vocab.size());
            out[names[o]][vocab[list[i].feature]] = list[i].weight;
          }
          return absl::OkStatus();
        });
    EXPECT_TRUE(s.ok()) << s;
    EXPECT_EQ(entries.size(), row_start.back());
    uint64_t nonempty = 0;
    for (size_t o = 0; o < names.size(); ++o) nonempty += row_start[o + 1] > row_start[o];
    EXPECT_EQ(nonempty, visited);
  }
  return out;
}

// Reference parser for well-formed feature text (tab after the node,
// space-separated tokens, weight after the last ':'; repeats summed).
FeatureMap ParseFeatureText(const std::string& text) {
  FeatureMap out;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    if (line[0] == '#') continue;
    std::vector<absl::string_view> parts = absl::StrSplit(line, absl::MaxSplits('\t', 1));
    auto& row = out[std::string(parts[0])];
    if (parts.size() < 2) continue;
    for (absl::string_view tok : absl::StrSplit(parts[1], absl::ByAnyChar(" \t"), absl::SkipEmpty())) {
      float w = 1;
      size_t colon = tok.rfind(':');
      if (colon != absl::string_view::npos) {
        EXPECT_TRUE(absl::SimpleAtof(tok.substr(colon + 1), &w));
        tok = tok.substr(0, colon);
      }
      row[std::string(tok)] += w;
    }
  }
  for (auto it = out.begin(); it != out.end();) {
    it = it->second.empty() ? out.erase(it) : std::next(it);
  }
  return out;
}

void WriteGzip(const std::string& path, std::string_view text) {
  gzFile f = gzopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

TEST(FeatureImportTest, GeneratedFeaturesRoundTrip) {
  ScopedTempDir dir;
  tools::gen::SbmOptions sbm;
  sbm.nodes = 600;
  sbm.blocks = 6;
  sbm.avg_degree = 3;  // some nodes have no edge: unknown to the graph
  sbm.seed = 7;
  tools::gen::GenOutputOptions out;
  out.path = dir.Sub("edges.tsv");
  out.threads = 1;
  ASSERT_TRUE(tools::gen::GenerateSbm(sbm, out, dir.Sub("labels.tsv")).ok());
  tools::gen::FeaturesOptions fo;
  fo.vocab = 5000;
  fo.seed = 3;
  tools::gen::GenOutputOptions fout = out;
  fout.path = dir.Sub("features.tsv");
  ASSERT_TRUE(tools::gen::GenerateFeatures(fo, dir.Sub("labels.tsv"), fout).ok());

  ImportOptions o = BasicOptions(dir.Sub("g"), {dir.Sub("edges.tsv")});
  o.num_partitions = 3;
  o.node_feature_files = {dir.Sub("features.tsv")};
  absl::StatusOr<ImportSummary> s = ImportGraph(o);
  ASSERT_TRUE(s.ok()) << s.status();
  auto g = OpenGraph(dir.Sub("g"));
  ASSERT_TRUE(g.ok()) << g.status();

  FeatureMap expected = ParseFeatureText(ReadWholeFile(dir.Sub("features.tsv")));
  uint64_t unknown = 0, nnz = 0;
  for (auto it = expected.begin(); it != expected.end();) {
    if (!(*g)->LookupNode(it->first).ok()) {
      ++unknown;
      it = expected.erase(it);
    } else {
      nnz += it->second.size();
      ++it;
    }
  }
  EXPECT_GT(unknown, 0u);
  EXPECT_EQ(s->features.unknown_nodes, unknown);
  EXPECT_EQ(s->features.lines, sbm.nodes);
  EXPECT_EQ(s->features.nodes_with_features, expected.size());
  EXPECT_EQ(s->features.nonzeros, nnz);
  EXPECT_EQ((*g)->manifest().num_features, s->features.vocab_size);
  EXPECT_LE(s->features.vocab_size, fo.vocab);
  EXPECT_EQ(ReadGraphFeatures(**g), expected);
}

TEST(FeatureImportTest, GzipIntegerIdsRepeatsAndColonNames) {
  ScopedTempDir dir;
  WriteFile(dir.Sub("e.tsv"), "1\t2\n2\t3\n3\t10\n");
  // Comments, blank lines, CRLF, tabs and spaces between features, a
  // repeated feature (summed), a name with ':' (explicit weight), integer
  // feature names, a non-canonical node id, a node with no features.
  WriteGzip(dir.Sub("f.gz"),
            "# features\n\n"
            "1\tx y:0.5 x:2\r\n"
            "002\t17\t a:b:1.5 ' \n"
            "3\n"
            "10 z:-1\n");
  ImportOptions o = BasicOptions(dir.Sub("g"), {dir.Sub("e.tsv")});
  o.integer_ids = true;
  o.num_partitions = 2;
  o.node_feature_files = {dir.Sub("f.gz")};
  absl::StatusOr<ImportSummary> s = ImportGraph(o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->features.lines, 4u);
  EXPECT_EQ(s->features.nodes_with_features, 4u);
  EXPECT_EQ(s->features.nonzeros, 6u);
  EXPECT_EQ(s->features.vocab_size, 6u);
  auto g = OpenGraph(dir.Sub("g"));
  ASSERT_TRUE(g.ok()) << g.status();
  FeatureMap expected = {
      {"1", {{"x", 3.0f}, {"y", 0.5f}}},
      {"2", {{"17", 1.0f}, {"a:b", 1.5f}, {"'", 1.0f}}},
      {"10", {{"z", -1.0f}}},
  };
  EXPECT_EQ(ReadGraphFeatures(**g), expected);
  // Ids in order of first appearance.
  EXPECT_EQ(*(*g)->ReadBlob(kFeatureVocabBlob), "x\ny\n17\na:b\n'\nz\n");
}

TEST(FeatureImportTest, NoFeaturesMeansNoVocab) {
  ScopedTempDir dir;
  WriteFile(dir.Sub("e.tsv"), "a\tb\n");
  ASSERT_TRUE(ImportGraph(BasicOptions(dir.Sub("g"), {dir.Sub("e.tsv")})).ok());
  auto g = OpenGraph(dir.Sub("g"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ((*g)->manifest().num_features, 0u);
  EXPECT_FALSE((*g)->ReadBlob(kFeatureVocabBlob).ok());
  std::vector<uint64_t> rows;
  std::vector<FeatureEntry> entries;
  ASSERT_TRUE((*g)->ReadPartitionFeatures(0, &rows, &entries).ok());
  EXPECT_EQ(rows, std::vector<uint64_t>(3, 0));
  EXPECT_TRUE(entries.empty());
}

struct BadCase {
  std::string line;
  std::string reason;     // FeatureRejectReasonName
  std::string message;    // part of the error
};

TEST(FeatureImportTest, BadLinesNameFileAndLineAndLeaveNothing) {
  const std::vector<BadCase> cases = {
      {"\tx", "empty_node", "empty node"},
      {"a\tx:abc", "bad_weight", "bad weight 'abc'"},
      {"a\tx:", "bad_weight", "bad weight ''"},
      {"a\tx:nan", "non_finite_weight", "non-finite weight"},
      {"a\tx:inf", "non_finite_weight", "non-finite weight"},
      {"a\t:2", "bad_feature", "empty feature name"},
      {"a\tx\xff", "bad_feature", "invalid UTF-8"},
      {"a\xc3\tx", "invalid_node", "invalid UTF-8"},
      {"a\x01\tx", "invalid_node", "binary data"},
      {"b\ty\na\tx", "duplicate_node", "already has a feature line"},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.reason + ": " + c.line);
    ScopedTempDir dir;
    WriteFile(dir.Sub("e.tsv"), "a\tb\n");
    WriteFile(dir.Sub("feat.txt"), "# header\nb\tz\n" + c.line + "\n");
    ImportOptions o = BasicOptions(dir.Sub("g"), {dir.Sub("e.tsv")});
    o.node_feature_files = {dir.Sub("feat.txt")};
    absl::StatusOr<ImportSummary> s = ImportGraph(o);
    ASSERT_FALSE(s.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(s.status())) << s.status();
    const std::string where = dir.Sub("feat.txt") + ":3: ";
    const std::string msg(s.status().message());
    EXPECT_NE(msg.find(where), std::string::npos) << msg;
    EXPECT_NE(msg.find(c.message), std::string::npos) << msg;
    ExpectNothingAt(dir.Sub("g"));

    // With --skip-bad-lines the line is counted and skipped.
    o.skip_bad_lines = true;
    s = ImportGraph(o);
    ASSERT_TRUE(s.ok()) << s.status();
    for (int r = 0; r < kNumFeatureRejectReasons; ++r) {
      const auto reason = static_cast<FeatureRejectReason>(r);
      EXPECT_EQ(s->features.rejected[r],
                FeatureRejectReasonName(reason) == c.reason ? 1u : 0u)
          << FeatureRejectReasonName(reason);
    }
    auto g = OpenGraph(dir.Sub("g"));
    ASSERT_TRUE(g.ok());
    FeatureMap got = ReadGraphFeatures(**g);
    // The first line for b wins; a's bad line stores nothing, except in the
    // duplicate case where a's own line is fine.
    FeatureMap expected = {{"b", {{"z", 1.0f}}}};
    if (c.reason == "duplicate_node") expected["a"] = {{"x", 1.0f}};
    EXPECT_EQ(got, expected);
  }
}

TEST(FeatureImportTest, UnknownNodesAreCountedNotErrors) {
  ScopedTempDir dir;
  WriteFile(dir.Sub("e.tsv"), "a\tb\n");
  WriteFile(dir.Sub("f.tsv"), "a\tx\nnobody\ty\nb\tx:2\nghost\tz\n");
  ImportOptions o = BasicOptions(dir.Sub("g"), {dir.Sub("e.tsv")});
  o.node_feature_files = {dir.Sub("f.tsv")};
  absl::StatusOr<ImportSummary> s = ImportGraph(o);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->features.unknown_nodes, 2u);
  EXPECT_EQ(s->features.nodes_with_features, 2u);
  // Unknown nodes' features do not enter the vocabulary.
  EXPECT_EQ(s->features.vocab_size, 1u);
  auto g = OpenGraph(dir.Sub("g"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(ReadGraphFeatures(**g), (FeatureMap{{"a", {{"x", 1.0f}}}, {"b", {{"x", 2.0f}}}}));
}

TEST(FeatureImportTest, SeveralFilesAndMissingFile) {
  ScopedTempDir dir;
  WriteFile(dir.Sub("e.tsv"), "a\tb\n");
  WriteFile(dir.Sub("f1.tsv"), "a\tx\n");
  WriteFile(dir.Sub("f2.tsv"), "b\ty\n");
  ImportOptions o = BasicOptions(dir.Sub("g"), {dir.Sub("e.tsv")});
  o.node_feature_files = {dir.Sub("f1.tsv"), dir.Sub("f2.tsv")};
  ASSERT_TRUE(ImportGraph(o).ok());
  auto g = OpenGraph(dir.Sub("g"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(ReadGraphFeatures(**g), (FeatureMap{{"a", {{"x", 1.0f}}}, {"b", {{"y", 1.0f}}}}));

  o.out = dir.Sub("g2");
  o.node_feature_files = {dir.Sub("missing.tsv")};
  absl::StatusOr<ImportSummary> s = ImportGraph(o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(std::string(s.status().message()).find("missing.tsv"), std::string::npos)
      << s.status();
  ExpectNothingAt(dir.Sub("g2"));
}

TEST(FeatureImportTest, AppendWithFeaturesIsRejected) {
  ScopedTempDir dir;
  WriteFile(dir.Sub("e.tsv"), "a\tb\n");
  WriteFile(dir.Sub("f.tsv"), "a\tx\n");
  ASSERT_TRUE(ImportGraph(BasicOptions(dir.Sub("g"), {dir.Sub("e.tsv")})).ok());
  ImportOptions o = BasicOptions(dir.Sub("g"), {dir.Sub("e.tsv")});
  o.append = true;
  o.node_feature_files = {dir.Sub("f.tsv")};
  absl::StatusOr<ImportSummary> s = ImportGraph(o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(s.status()));
  EXPECT_NE(std::string(s.status().message()).find("--append"), std::string::npos);
}

// Drives ImportNodeFeatures directly with a tiny row buffer, so that each
// partition gets several runs overlapping in key range.
TEST(FeatureImportTest, ManySmallRunsPerPartition) {
  ScopedTempDir dir;
  const uint32_t kParts = 2;
  const uint32_t kNodes = 400;
  GraphBuilderOptions bo;
  bo.num_partitions = kParts;
  auto builder = GraphBuilder::Create(dir.Sub("g"), bo);
  ASSERT_TRUE(builder.ok()) << builder.status();
  std::vector<std::pair<uint64_t, uint64_t>> slots;
  std::vector<uint64_t> sizes(kParts, 0);
  for (uint32_t i = 0; i < kNodes; ++i) {
    const uint32_t p = i % kParts;
    slots.emplace_back(StringNodeKey("n" + std::to_string(i)),
                       PackSlot(p, static_cast<uint32_t>(sizes[p]++), true));
  }
  std::sort(slots.begin(), slots.end());
  const std::string slot_file = (*builder)->scratch_dir() + "/slots";
  {
    auto w = RecordWriter::Create(slot_file);
    ASSERT_TRUE(w.ok());
    for (auto [k, v] : slots) {
      uint64_t rec[2] = {k, v};
      ASSERT_TRUE((*w)->Append(rec, sizeof(rec)).ok());
    }
    ASSERT_TRUE((*w)->Close().ok());
  }
  // Lines in reverse node order, so runs are not globally sorted.
  std::string text;
  for (int i = kNodes - 1; i >= 0; --i) {
    text += "n" + std::to_string(i) + "\t";
    for (int k = 0; k <= i % 5; ++k) text += "f" + std::to_string((i + k) % 37) + ":" + std::to_string(k + 1) + " ";
    text += "\n";
  }
  WriteFile(dir.Sub("f.tsv"), text);
  FeatureImportOptions fo;
  fo.files = {dir.Sub("f.tsv")};
  fo.buffer_bytes = 512;
  // Invalid options are refused before anything is read or written.
  FeatureImportOptions no_budget = fo;
  no_budget.memory_budget = 0;
  EXPECT_EQ(ImportNodeFeatures(builder->get(), slot_file, sizes, no_budget).status().code(),
            absl::StatusCode::kInvalidArgument);
  absl::StatusOr<FeatureImportSummary> s =
      ImportNodeFeatures(builder->get(), slot_file, sizes, fo);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_GT(s->runs_written, 10u);
  Manifest m;
  m.num_partitions = kParts;
  m.partition_sizes = sizes;
  m.num_nodes = kNodes;
  m.num_features = s->vocab_size;
  ASSERT_TRUE((*builder)->Commit(m).ok());
  auto g = OpenGraph(dir.Sub("g"));
  ASSERT_TRUE(g.ok()) << g.status();
  const std::string vocab = *(*g)->ReadBlob(kFeatureVocabBlob);
  std::vector<std::string> names = absl::StrSplit(vocab, '\n', absl::SkipEmpty());
  EXPECT_EQ(names.size(), 37u);
  for (uint32_t i = 0; i < kNodes; ++i) {
    // Node i is at (i % P, i / P).
    std::map<std::string, float> want;
    for (int k = 0; k <= static_cast<int>(i % 5); ++k) {
      want["f" + std::to_string((i + k) % 37)] += k + 1;
    }
    std::vector<uint64_t> rows;
    std::vector<FeatureEntry> entries;
    ASSERT_TRUE((*g)->ReadPartitionFeatures(i % kParts, &rows, &entries).ok());
    std::map<std::string, float> got;
    for (uint64_t e = rows[i / kParts]; e < rows[i / kParts + 1]; ++e) {
      got[names[entries[e].feature]] = entries[e].weight;
    }
    EXPECT_EQ(got, want) << "node n" << i;
  }
}

TEST(FeatureImportTest, CommandLine) {
  ScopedTempDir dir;
  WriteFile(dir.Sub("e.tsv"), "a\tb\nb\tc\n");
  WriteFile(dir.Sub("labels.tsv"), "a\t0\nb\t1\nc\t1\n");
  ProcessResult gen = RunProcess(
      {EMBER_BINARY, "gen", "features", "--labels", dir.Sub("labels.tsv"),
       "--out", dir.Sub("f.tsv"), "--vocab", "50", "--seed", "5", "--quiet"},
      dir.path());
  ASSERT_EQ(gen.exit_code, 0) << gen.err;
  ProcessResult imp = RunProcess(
      {EMBER_BINARY, "import", "--out", dir.Sub("g"), "--node-features",
       dir.Sub("f.tsv"), "--quiet", "--json", dir.Sub("e.tsv")},
      dir.path());
  ASSERT_EQ(imp.exit_code, 0) << imp.err;
  EXPECT_NE(imp.out.find("\"features\""), std::string::npos) << imp.out;
  auto g = OpenGraph(dir.Sub("g"));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(ReadGraphFeatures(**g), ParseFeatureText(ReadWholeFile(dir.Sub("f.tsv"))));

  WriteFile(dir.Sub("bad.tsv"), "a\tx:zz\n");
  ProcessResult bad = RunProcess(
      {EMBER_BINARY, "import", "--out", dir.Sub("g3"), "--node-features",
       dir.Sub("bad.tsv"), "--quiet", dir.Sub("e.tsv")},
      dir.path());
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("bad.tsv:1: bad weight"), std::string::npos) << bad.err;
  ExpectNothingAt(dir.Sub("g3"));
}

}  // namespace
}  // namespace ember::import_test
