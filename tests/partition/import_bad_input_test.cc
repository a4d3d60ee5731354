// Integration tests of ImportGraph on awkward and bad input: each case
// either imports as documented (checked edge by edge, by name) or fails with
// "<file>:<line>: <reason>" and leaves nothing at --out.
#include <sys/stat.h>
#include <zlib.h>

#include <cstdio>
#include <thread>

#include <cstdint>
#include <random>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "partition/line_parser.h"
#include "storage/graph.h"
#include "tests/partition/test_util.h"

namespace ember::import_test {
namespace {

using std::string_literals::operator""s;

bool ContainsIgnoreCase(std::string_view haystack, std::string_view needle) {
  return absl::StrContains(absl::AsciiStrToLower(std::string(haystack)),
                           absl::AsciiStrToLower(std::string(needle)));
}

uint64_t Rejected(const ImportSummary& s, RejectReason r) {
  return s.rejected[static_cast<int>(r)];
}

class ImportBadInputTest : public ::testing::Test {
 protected:
  std::string Input(std::string_view name, std::string_view text) {
    const std::string path = tmp_.Sub(name);
    WriteFile(path, text);
    return path;
  }

  ImportOptions Options(std::vector<std::string> files) {
    return BasicOptions(out_, std::move(files));
  }

  // Expects `result` to be the failure for `file`:`line` naming `reason`
  // (a fragment of the message, case-insensitive), and nothing at out_.
  template <typename T>
  void ExpectBadLine(const absl::StatusOr<T>& result, const std::string& file,
                     uint64_t line, std::string_view reason) {
    ASSERT_FALSE(result.ok()) << "import of " << file << " succeeded";
    const std::string msg(result.status().message());
    const std::string prefix = absl::StrCat(file, ":", line, ": ");
    EXPECT_TRUE(absl::StartsWith(msg, prefix))
        << "message '" << msg << "' does not start with '" << prefix << "'";
    EXPECT_TRUE(ContainsIgnoreCase(msg, reason))
        << "message '" << msg << "' does not name the reason '" << reason << "'";
    ExpectNothingAt(out_);
  }

  // Imports with `o` and returns the train/valid/test edges by name.
  struct Result {
    ImportSummary summary;
    Manifest manifest;
    std::vector<NamedEdge> split[kNumSplits];
    std::vector<std::string> names;  // all node names, sorted
  };
  Result ImportOk(const ImportOptions& o, bool with_relations = false) {
    Result r;
    auto s = ImportGraph(o);
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok()) return r;
    r.summary = *s;
    auto g = Graph::Open(o.out);
    EXPECT_TRUE(g.ok()) << g.status();
    if (!g.ok()) return r;
    r.manifest = (*g)->manifest();
    NameCache names(**g, /*sample_stride=*/1);
    for (Split sp : kAllSplits) {
      r.split[static_cast<int>(sp)] =
          ReadNamedEdges(**g, sp, &names, with_relations);
    }
    for (const auto& part : names.all()) {
      r.names.insert(r.names.end(), part.begin(), part.end());
    }
    std::sort(r.names.begin(), r.names.end());
    EXPECT_TRUE(StagingDirs(o.out).empty());
    return r;
  }

  static std::vector<NamedEdge> Edges(
      std::vector<std::tuple<std::string, std::string, std::string>> v) {
    std::vector<NamedEdge> out;
    for (auto& [s, r, d] : v) out.push_back(NamedEdge{s, r, d});
    std::sort(out.begin(), out.end());
    return out;
  }
  static std::vector<NamedEdge> Pairs(
      std::vector<std::pair<std::string, std::string>> v) {
    std::vector<NamedEdge> out;
    for (auto& [s, d] : v) out.push_back(NamedEdge{s, "", d});
    std::sort(out.begin(), out.end());
    return out;
  }

  ScopedTempDir tmp_;
  const std::string out_ = tmp_.Sub("graph");
};

constexpr int kTrain = 0, kValid = 1, kTest = 2;

TEST_F(ImportBadInputTest, TooFewColumns) {
  const std::string f = Input("few.tsv", "a\tb\nc\nd\te\n");
  ExpectBadLine(ImportGraph(Options({f})), f, 2, "too few columns");
}

TEST_F(ImportBadInputTest, EmptyDestinationId) {
  const std::string f = Input("empty_dst.tsv", "a\tb\na\t\n");
  ImportOptions o = Options({f});
  o.delimiter = '\t';
  ExpectBadLine(ImportGraph(o), f, 2, "empty id");
}

TEST_F(ImportBadInputTest, EmptySourceId) {
  const std::string f = Input("empty_src.tsv", "a\tb\n\tb\n");
  ImportOptions o = Options({f});
  o.delimiter = '\t';
  ExpectBadLine(ImportGraph(o), f, 2, "empty id");
}

TEST_F(ImportBadInputTest, NonNumericIntegerId) {
  const std::string f = Input("nonnum.tsv", "1\t2\n3\t4\n5\tx6\n");
  ImportOptions o = Options({f});
  o.integer_ids = true;
  ExpectBadLine(ImportGraph(o), f, 3, "non-numeric");
}

TEST_F(ImportBadInputTest, NegativeIntegerId) {
  const std::string f = Input("neg.tsv", "1\t2\n-3\t4\n");
  ImportOptions o = Options({f});
  o.integer_ids = true;
  ExpectBadLine(ImportGraph(o), f, 2, "negative");
}

TEST_F(ImportBadInputTest, IntegerIdAbove2To64Minus1) {
  const std::string f =
      Input("big.tsv", "1\t18446744073709551615\n18446744073709551616\t4\n");
  ImportOptions o = Options({f});
  o.integer_ids = true;
  ExpectBadLine(ImportGraph(o), f, 2, "2^64");
}

TEST_F(ImportBadInputTest, IntegerIdsUpTo2To64Minus1Import) {
  const std::string f = Input("max.tsv", "0\t18446744073709551615\n7\t0\n");
  ImportOptions o = Options({f});
  o.integer_ids = true;
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain],
            Pairs({{"0", "18446744073709551615"}, {"7", "0"}}));
  EXPECT_EQ(r.summary.nodes, 3u);
  EXPECT_TRUE(r.manifest.integer_ids);
}

TEST_F(ImportBadInputTest, BinaryGarbage) {
  std::mt19937_64 rng(2024);
  std::string garbage(4096, '\0');
  for (char& c : garbage) c = static_cast<char>(rng() & 0xff);
  garbage[0] = '\0';  // line 2 surely holds a NUL
  garbage[1] = 'x';
  const std::string f = Input("garbage.tsv", "a\tb\n" + garbage);
  ExpectBadLine(ImportGraph(Options({f})), f, 2, "binary");
}

TEST_F(ImportBadInputTest, ControlByteInId) {
  const std::string f = Input("ctl.tsv", "a\tb\nc\x01\td\n");
  ExpectBadLine(ImportGraph(Options({f})), f, 2, "binary");
}

TEST_F(ImportBadInputTest, InvalidUtf8InStringId) {
  // Line 1 is valid UTF-8 ("café", "日本"); line 2 has a lone 0xff byte.
  const std::string f =
      Input("utf8.tsv", "caf\xc3\xa9\t\xe6\x97\xa5\xe6\x9c\xac\nok\tb\xff\n");
  ExpectBadLine(ImportGraph(Options({f})), f, 2, "UTF-8");
}

TEST_F(ImportBadInputTest, ValidUtf8IdsRoundTrip) {
  const std::string f =
      Input("utf8ok.tsv", "caf\xc3\xa9\t\xe6\x97\xa5\xe6\x9c\xac\n\xf0\x9f\x99\x82\tcaf\xc3\xa9\n");
  Result r = ImportOk(Options({f}));
  EXPECT_EQ(r.split[kTrain],
            Pairs({{"caf\xc3\xa9", "\xe6\x97\xa5\xe6\x9c\xac"},
                   {"\xf0\x9f\x99\x82", "caf\xc3\xa9"}}));
}

// Writes `text` as a gzip file with zlib.
void WriteGzip(const std::string& path, const std::string& text) {
  gzFile gz = gzopen(path.c_str(), "wb6");
  ASSERT_NE(gz, nullptr) << path;
  ASSERT_EQ(gzwrite(gz, text.data(), static_cast<unsigned>(text.size())),
            static_cast<int>(text.size()));
  ASSERT_EQ(gzclose(gz), Z_OK);
}

std::string NumberedLines(int n) {
  std::string text;
  std::mt19937_64 rng(9);
  for (int i = 0; i < n; ++i) {
    absl::StrAppend(&text, "u", rng() % 100000, "\tv", rng() % 100000, "\n");
  }
  return text;
}

TEST_F(ImportBadInputTest, GzipImportsLikePlainText) {
  const std::string text = NumberedLines(5000);
  const std::string plain = Input("edges.tsv", text);
  const std::string gz = tmp_.Sub("edges.tsv.gz");
  ASSERT_NO_FATAL_FAILURE(WriteGzip(gz, text));
  Result a = ImportOk(Options({gz}));
  ImportOptions o = Options({plain});
  o.out = tmp_.Sub("plain_graph");
  Result b = ImportOk(o);
  EXPECT_EQ(a.summary.lines, 5000u);
  EXPECT_EQ(a.split[kTrain].size(), 5000u);
  EXPECT_EQ(a.split[kTrain], b.split[kTrain]);
}

TEST_F(ImportBadInputTest, TruncatedGzip) {
  const int kLines = 200000;
  const std::string text = NumberedLines(kLines);
  const std::string whole = tmp_.Sub("whole.tsv.gz");
  ASSERT_NO_FATAL_FAILURE(WriteGzip(whole, text));
  const std::string bytes = ReadWholeFile(whole);
  const std::string f = Input("cut.tsv.gz", bytes.substr(0, bytes.size() / 2));
  auto s = ImportGraph(Options({f}));
  ASSERT_FALSE(s.ok()) << "a truncated .gz imported";
  const std::string msg(s.status().message());
  std::smatch m;
  const std::regex re("^" + std::regex_replace(f, std::regex(R"([.^$|()\[\]{}*+?\\])"), R"(\$&)") +
                      R"(:(\d+): (.*)$)");
  ASSERT_TRUE(std::regex_match(msg, m, re))
      << "message '" << msg << "' does not start with '" << f << ":<line>: '";
  const uint64_t line = std::stoull(m[1].str());
  // Half the compressed bytes hold roughly half the lines.
  EXPECT_GT(line, kLines / 4) << msg;
  EXPECT_LT(line, kLines * 3 / 4) << msg;
  EXPECT_TRUE(ContainsIgnoreCase(msg, "truncated") ||
              ContainsIgnoreCase(msg, "corrupt"))
      << msg;
  ExpectNothingAt(out_);
}

TEST_F(ImportBadInputTest, CrlfLineEndings) {
  const std::string f =
      Input("crlf.tsv", "a\tb\r\nb\tc\r\n# comment\r\n\r\nc\ta\r");  // no final \n
  Result r = ImportOk(Options({f}));
  EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}, {"c", "a"}}));
  EXPECT_EQ(r.names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(r.summary.lines, 3u);
}

TEST_F(ImportBadInputTest, CrlfThreeColumnsAndCommas) {
  const std::string f3 = Input("crlf3.tsv", "a\tr\tb\r\nb\ts\tc\r\n");
  ImportOptions o = Options({f3});
  Result r = ImportOk(o, /*with_relations=*/true);
  EXPECT_EQ(r.split[kTrain], Edges({{"a", "r", "b"}, {"b", "s", "c"}}));
  std::vector<std::string> rels = r.manifest.relations;
  std::sort(rels.begin(), rels.end());
  EXPECT_EQ(rels, (std::vector<std::string>{"r", "s"}));

  const std::string fc = Input("crlf.csv", "1,2\r\n2,3\r\n");
  o = Options({fc});
  o.out = tmp_.Sub("csv_graph");
  o.integer_ids = true;
  r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"1", "2"}, {"2", "3"}}));
}

TEST_F(ImportBadInputTest, CommentsAndBlankLinesSkippedButCounted) {
  const std::string text =
      "# SNAP-style header\n"   // 1
      "% matrix-market comment\n"  // 2
      "\n"                      // 3
      "a\tb\n"                  // 4
      "   \n"                   // 5
      "  # indented comment\n"  // 6
      "b\tc\n"                  // 7
      "\n";                     // 8
  const std::string good = Input("comments.tsv", text);
  Result r = ImportOk(Options({good}));
  EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(r.summary.lines, 2u);

  // The same file with a bad line 9: the number counts comments and blanks.
  const std::string bad = Input("comments_bad.tsv", text + "c\n");
  ImportOptions o = Options({bad});
  o.out = out_;
  std::filesystem::remove_all(out_);
  ExpectBadLine(ImportGraph(o), bad, 9, "too few columns");
}

TEST_F(ImportBadInputTest, BadLineLateInALargeFile) {
  // The bad line comes in a later read chunk than the first, after edges
  // and nodes have been spilled to the staging directory.
  std::string text = NumberedLines(300000);
  const uint64_t bad_line = 300001;
  text += "u1\t\n";
  const std::string f = Input("late.tsv", text);
  ImportOptions o = Options({f});
  o.delimiter = '\t';
  ExpectBadLine(ImportGraph(o), f, bad_line, "empty id");
}

TEST_F(ImportBadInputTest, MissingRelationColumn) {
  const std::string f = Input("kg.tsv", "a\tr\tb\nc\td\n");
  ExpectBadLine(ImportGraph(Options({f})), f, 2, "too few columns");
  const std::string msg(ImportGraph(Options({f})).status().message());
  EXPECT_TRUE(absl::StrContains(msg, "relation")) << msg;
}

TEST_F(ImportBadInputTest, DuplicatesKeptByDefaultDroppedWithDedupe) {
  const std::string f =
      Input("dups.tsv", "a\tb\na\tb\nb\tc\na\tb\nb\ta\n");
  Result r = ImportOk(Options({f}));
  EXPECT_EQ(r.split[kTrain],
            Pairs({{"a", "b"}, {"a", "b"}, {"a", "b"}, {"b", "c"}, {"b", "a"}}));
  EXPECT_EQ(r.summary.duplicates_dropped, 0u);

  ImportOptions o = Options({f});
  o.out = tmp_.Sub("deduped");
  o.dedupe = true;
  Result d = ImportOk(o);
  EXPECT_EQ(d.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}, {"b", "a"}}));
  EXPECT_EQ(d.summary.duplicates_dropped, 2u);
  EXPECT_EQ(d.summary.edges.train, 3u);
  EXPECT_EQ(d.manifest.edges.train, 3u);
}

TEST_F(ImportBadInputTest, DedupeKeepsEdgesThatDifferInRelation) {
  const std::string f =
      Input("kgdups.tsv", "a\tr\tb\na\ts\tb\na\tr\tb\n");
  ImportOptions o = Options({f});
  o.dedupe = true;
  Result d = ImportOk(o, /*with_relations=*/true);
  EXPECT_EQ(d.split[kTrain], Edges({{"a", "r", "b"}, {"a", "s", "b"}}));
  EXPECT_EQ(d.summary.duplicates_dropped, 1u);
}

TEST_F(ImportBadInputTest, SelfLoopsKeptByDefaultDroppedOnRequest) {
  const std::string f = Input("loops.tsv", "a\ta\na\tb\nb\tb\nb\tc\nz\tz\n");
  Result r = ImportOk(Options({f}));
  EXPECT_EQ(r.split[kTrain], Pairs({{"a", "a"}, {"a", "b"}, {"b", "b"},
                                    {"b", "c"}, {"z", "z"}}));
  EXPECT_EQ(r.summary.self_loops_dropped, 0u);
  EXPECT_EQ(r.names, (std::vector<std::string>{"a", "b", "c", "z"}));

  ImportOptions o = Options({f});
  o.out = tmp_.Sub("no_loops");
  o.drop_self_loops = true;
  Result d = ImportOk(o);
  EXPECT_EQ(d.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(d.summary.self_loops_dropped, 3u);
  // z only had a dropped self loop: it is no node.
  EXPECT_EQ(d.names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(d.summary.nodes, 3u);
  EXPECT_EQ(d.manifest.edges.train, 2u);
}

TEST_F(ImportBadInputTest, SkipBadLinesCountsEachReasonIntegerIds) {
  const std::string f = Input("mixed_int.tsv",
                              "1\t2\n"                      // good
                              "3\n"                         // too few columns
                              "\t4\n"                       // empty id
                              "x\t5\n"                      // non-numeric
                              "2\t3\n"                      // good
                              "-1\t6\n"                     // negative
                              "99999999999999999999\t7\n"   // out of range
                              "8\t9\x01\n"                  // control byte
                              "3\t1\n");                    // good
  ImportOptions o = Options({f});
  o.integer_ids = true;
  o.skip_bad_lines = true;
  o.delimiter = '\t';
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"1", "2"}, {"2", "3"}, {"3", "1"}}));
  EXPECT_EQ(Rejected(r.summary, RejectReason::kTooFewColumns), 1u);
  EXPECT_EQ(Rejected(r.summary, RejectReason::kEmptyId), 1u);
  EXPECT_EQ(Rejected(r.summary, RejectReason::kNegativeId), 1u);
  EXPECT_EQ(Rejected(r.summary, RejectReason::kIdOutOfRange), 1u);
  // "x" and "9\x01" are both not numbers; either class is fair for the
  // control byte, but together they are two rejections.
  EXPECT_EQ(Rejected(r.summary, RejectReason::kNonNumericId) +
                Rejected(r.summary, RejectReason::kBinaryData),
            2u);
  EXPECT_GE(Rejected(r.summary, RejectReason::kNonNumericId), 1u);
  EXPECT_EQ(r.summary.edges.train, 3u);
  EXPECT_EQ(r.summary.nodes, 3u);
}

TEST_F(ImportBadInputTest, SkipBadLinesCountsEachReasonStringIds) {
  const std::string f = Input("mixed_str.tsv",
                              "a\tb\n"       // good
                              "c\td\x01\n"   // binary (control byte)
                              "e\xff\tf\n"   // invalid UTF-8
                              "g\n"          // too few columns
                              "h\t\n"        // empty id
                              "b\tc\n"       // good
                              "i\x00j\tk\n"  // binary (NUL)
                              "c\ta\n"s);    // good
  ImportOptions o = Options({f});
  o.skip_bad_lines = true;
  o.delimiter = '\t';
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}, {"c", "a"}}));
  EXPECT_EQ(r.names, (std::vector<std::string>{"a", "b", "c"}))
      << "a rejected line's ids became nodes";
  EXPECT_EQ(Rejected(r.summary, RejectReason::kBinaryData), 2u);
  EXPECT_EQ(Rejected(r.summary, RejectReason::kInvalidUtf8), 1u);
  EXPECT_EQ(Rejected(r.summary, RejectReason::kTooFewColumns), 1u);
  EXPECT_EQ(Rejected(r.summary, RejectReason::kEmptyId), 1u);
  uint64_t total = 0;
  for (uint64_t c : r.summary.rejected) total += c;
  EXPECT_EQ(total, 5u);
}

TEST_F(ImportBadInputTest, OnlyBadLinesFails) {
  const std::string f = Input("allbad.tsv", "a\nb\n");
  ImportOptions o = Options({f});
  o.skip_bad_lines = true;
  auto s = ImportGraph(o);
  EXPECT_FALSE(s.ok()) << "an import with no edges succeeded";
  ExpectNothingAt(out_);
}

TEST_F(ImportBadInputTest, ExistingOutRefusedWithoutOverwrite) {
  const std::string f = Input("e.tsv", "a\tb\n");
  ASSERT_TRUE(std::filesystem::create_directory(out_));
  WriteFile(out_ + "/precious.txt", "keep me");
  auto s = ImportGraph(Options({f}));
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists) << s.status();
  EXPECT_TRUE(absl::StrContains(s.status().message(), out_)) << s.status();
  EXPECT_EQ(ReadWholeFile(out_ + "/precious.txt"), "keep me");
  EXPECT_TRUE(StagingDirs(out_).empty());

  // --overwrite replaces only what ember made: a folder of the user's is
  // refused, naming what it holds, and left as it was.
  ImportOptions o = Options({f});
  o.overwrite = true;
  auto overwrite = ImportGraph(o);
  ASSERT_FALSE(overwrite.ok());
  EXPECT_EQ(overwrite.status().code(), absl::StatusCode::kFailedPrecondition) << overwrite.status();
  EXPECT_TRUE(absl::StrContains(overwrite.status().message(), "precious.txt"))
      << overwrite.status();
  EXPECT_TRUE(absl::StrContains(overwrite.status().message(), "not an ember graph"))
      << overwrite.status();
  EXPECT_EQ(ReadWholeFile(out_ + "/precious.txt"), "keep me");
  EXPECT_TRUE(StagingDirs(out_).empty());
}

TEST_F(ImportBadInputTest, OverwriteRefusesAFileAndAForeignManifest) {
  const std::string f = Input("e.tsv", "a\tb\n");
  WriteFile(out_, "a user's file");
  ImportOptions o = Options({f});
  o.overwrite = true;
  auto refused = ImportGraph(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "is a file")) << refused.status();
  EXPECT_EQ(ReadWholeFile(out_), "a user's file");

  // A MANIFEST.json that is not ember's does not make a folder a graph.
  std::filesystem::remove(out_);
  ASSERT_TRUE(std::filesystem::create_directory(out_));
  WriteFile(out_ + "/MANIFEST.json", "{\"name\": \"my web app\"}");
  WriteFile(out_ + "/index.html", "<html/>");
  refused = ImportGraph(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_EQ(ReadWholeFile(out_ + "/index.html"), "<html/>");
  EXPECT_TRUE(StagingDirs(out_).empty());
}

TEST_F(ImportBadInputTest, OverwriteReplacesAnEmptyDirectory) {
  const std::string f = Input("e.tsv", "a\tb\n");
  ASSERT_TRUE(std::filesystem::create_directory(out_));
  ImportOptions o = Options({f});
  o.overwrite = true;
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}}));
}

TEST_F(ImportBadInputTest, OverwriteDoesNotFollowALinkOutOfTheGraph) {
  const std::string f = Input("e.tsv", "a\tb\n");
  ImportOk(Options({f}));
  // A link inside the old graph to a folder of the user's: replacing the
  // graph removes the link, not what it points to.
  const std::string outside = out_ + "-outside";
  ASSERT_TRUE(std::filesystem::create_directory(outside));
  WriteFile(outside + "/precious.txt", "keep me");
  std::filesystem::create_directory_symlink(outside, out_ + "/linked");
  ImportOptions o = Options({Input("two.tsv", "x\ty\n")});
  o.overwrite = true;
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"x", "y"}}));
  EXPECT_FALSE(std::filesystem::exists(out_ + "/linked"));
  EXPECT_EQ(ReadWholeFile(outside + "/precious.txt"), "keep me");
}

TEST_F(ImportBadInputTest, OverwriteReplacesAnExistingGraph) {
  const std::string f1 = Input("one.tsv", "a\tb\n");
  const std::string f2 = Input("two.tsv", "x\ty\ny\tz\n");
  ImportOk(Options({f1}));
  auto refused = ImportGraph(Options({f2}));
  EXPECT_FALSE(refused.ok());
  ImportOptions o = Options({f2});
  o.overwrite = true;
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"x", "y"}, {"y", "z"}}));
  EXPECT_EQ(r.names, (std::vector<std::string>{"x", "y", "z"}));
  // A failed overwrite leaves the old graph in place, and no staging dir.
  const std::string bad = Input("bad.tsv", "p\tq\nr\n");
  o = Options({bad});
  o.overwrite = true;
  auto failed = ImportGraph(o);
  ASSERT_FALSE(failed.ok());
  EXPECT_TRUE(absl::StartsWith(failed.status().message(), bad + ":2: "))
      << failed.status();
  EXPECT_TRUE(StagingDirs(out_).empty());
  auto g = Graph::Open(out_);
  ASSERT_TRUE(g.ok()) << "the old graph is gone after a failed overwrite: "
                      << g.status();
  EXPECT_EQ(ReadNamedEdges(**g, Split::kTrain), Pairs({{"x", "y"}, {"y", "z"}}));
}

TEST_F(ImportBadInputTest, LeadingZerosAreDistinctStringIds) {
  // WN18RR-style synset ids.
  const std::string f = Input("wn18rr.txt",
                              "00260881\t_hypernym\t00260622\n"
                              "260881\t_hypernym\t00260881\n"
                              "0\t_also_see\t00\n");
  Result r = ImportOk(Options({f}), /*with_relations=*/true);
  EXPECT_EQ(r.split[kTrain], Edges({{"00260881", "_hypernym", "00260622"},
                                    {"260881", "_hypernym", "00260881"},
                                    {"0", "_also_see", "00"}}));
  EXPECT_EQ(r.names, (std::vector<std::string>{"0", "00", "00260622",
                                               "00260881", "260881"}));
  EXPECT_EQ(r.summary.relations, 2u);
}

TEST_F(ImportBadInputTest, Fb15kTriples) {
  const std::string f = Input("fb15k.txt",
                              "/m/027rn\t/location/country/form_of_government\t/m/06cx9\n"
                              "/m/017dcd\t/tv/tv_program/regular_cast./tv/regular_tv_appearance/actor\t/m/06v8s0\n"
                              "/m/06cx9\t/location/country/form_of_government\t/m/027rn\n");
  Result r = ImportOk(Options({f}), /*with_relations=*/true);
  EXPECT_EQ(r.split[kTrain],
            Edges({{"/m/027rn", "/location/country/form_of_government", "/m/06cx9"},
                   {"/m/017dcd",
                    "/tv/tv_program/regular_cast./tv/regular_tv_appearance/actor",
                    "/m/06v8s0"},
                   {"/m/06cx9", "/location/country/form_of_government", "/m/027rn"}}));
  EXPECT_EQ(r.summary.nodes, 4u);
  EXPECT_EQ(r.manifest.relations.size(), 2u);
}

TEST_F(ImportBadInputTest, SnapEdgeList) {
  const std::string f = Input("snap.txt",
                              "# Directed graph (each unordered pair of nodes is saved once): web-Google.txt\n"
                              "# Nodes: 4 Edges: 4\n"
                              "# FromNodeId\tToNodeId\n"
                              "0\t11342\n"
                              "0\t824020\n"
                              "11342\t0\n"
                              "824020\t91807\n");
  ImportOptions o = Options({f});
  o.integer_ids = true;
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"0", "11342"}, {"0", "824020"},
                                    {"11342", "0"}, {"824020", "91807"}}));
  EXPECT_EQ(r.summary.nodes, 4u);
}

TEST_F(ImportBadInputTest, OgbCommaFile) {
  const std::string f = Input("edge.csv", "0,1\n1,2\n2, 0\n0,2\n");
  ImportOptions o = Options({f});
  o.integer_ids = true;
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"0", "1"}, {"1", "2"}, {"2", "0"}, {"0", "2"}}));
  EXPECT_EQ(r.summary.nodes, 3u);
}

TEST_F(ImportBadInputTest, SpaceDelimitedRunsOfBlanks) {
  const std::string f = Input("space.txt", "a b\nb   c\nc \t a\n");
  Result r = ImportOk(Options({f}));
  EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}, {"c", "a"}}));
}

TEST_F(ImportBadInputTest, HeaderLineSkippedInEachFileIncludingGzip) {
  const std::string f1 = Input("h1.tsv", "src\tdst\na\tb\n");
  const std::string f2 = tmp_.Sub("h2.tsv.gz");
  ASSERT_NO_FATAL_FAILURE(WriteGzip(f2, "from\tto\nb\tc\nc\t\n"));
  ImportOptions o = Options({f1, f2});
  o.header = true;
  o.delimiter = '\t';
  // Line 3 of the gzip file is bad: the header still counts as line 1.
  ExpectBadLine(ImportGraph(o), f2, 3, "empty id");
  ASSERT_NO_FATAL_FAILURE(WriteGzip(f2, "from\tto\nb\tc\n"));
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}}));
  EXPECT_EQ(r.names, (std::vector<std::string>{"a", "b", "c"}));
}

TEST_F(ImportBadInputTest, ColumnsPickOtherPositions) {
  const std::string f = Input("cols.tsv", "w1\ta\tb\tr\nw2\tb\tc\ts\n");
  ImportOptions o = Options({f});
  o.columns = {1, 3, 2};  // SRC, REL, DST
  Result r = ImportOk(o, /*with_relations=*/true);
  EXPECT_EQ(r.split[kTrain], Edges({{"a", "r", "b"}, {"b", "s", "c"}}));
  EXPECT_EQ(r.summary.nodes, 3u);
}

// A `user item rating timestamp` file used to import as three "relations"
// named after its ratings: more than 3 columns need --columns, and the
// refusal names the file, the line and the flag.
TEST_F(ImportBadInputTest, MoreThanThreeColumnsNeedColumns) {
  const std::string f = Input("ratings.tsv",
                              "# MovieLens\n196\t242\t3\t881250949\n"
                              "186\t302\t3\t891717742\n");
  auto refused = ImportGraph(Options({f}));
  ExpectBadLine(refused, f, 2, "4 columns");
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "--columns 0,1")) << refused.status();
  ImportOptions o = Options({f});
  o.columns = {0, 1};
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"196", "242"}, {"186", "302"}}));
  EXPECT_EQ(r.summary.relations, 1u);
}

// A header row imported as an edge is worth a word: a warning naming
// --header (string ids), or the error's hint (integer ids, where the row
// cannot parse). With --header, neither.
TEST_F(ImportBadInputTest, HeaderLikeFirstLineIsNamed) {
  const std::string f = Input("hdr.tsv", "user_id\titem_id\nu1\ti1\nu2\ti1\n");
  Result r = ImportOk(Options({f}));
  ASSERT_EQ(r.summary.warnings.size(), 1u);
  EXPECT_TRUE(absl::StartsWith(r.summary.warnings[0], f + ":1: ")) << r.summary.warnings[0];
  EXPECT_TRUE(absl::StrContains(r.summary.warnings[0], "--header")) << r.summary.warnings[0];
  ImportOptions o = Options({f});
  o.overwrite = true;
  o.header = true;
  r = ImportOk(o);
  EXPECT_TRUE(r.summary.warnings.empty());
  EXPECT_EQ(r.split[kTrain], Pairs({{"u1", "i1"}, {"u2", "i1"}}));

  // Data that merely contains such words is not a header.
  const std::string g = Input("plain.tsv", "user\tu1\nu2\ti1\n");
  o = Options({g});
  o.overwrite = true;
  EXPECT_TRUE(ImportOk(o).summary.warnings.empty());

  const std::string ints = Input("ints.tsv", "src dst\n1 2\n2 3\n");
  o = Options({ints});
  o.overwrite = true;
  o.integer_ids = true;
  auto refused = ImportGraph(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StartsWith(refused.status().message(), ints + ":1: ")) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "--header")) << refused.status();
}

TEST(LineParserHeaderTest, LooksLikeHeader) {
  LineFormat two;
  two.delimiter = '\t';
  LineFormat three = two;
  three.rel_col = 1;
  three.dst_col = 2;
  EXPECT_TRUE(LooksLikeHeader("src\tdst", two));
  EXPECT_TRUE(LooksLikeHeader("userId\tmovieId", two));
  EXPECT_TRUE(LooksLikeHeader("\"head\"\t\"tail\"\r", two));
  EXPECT_TRUE(LooksLikeHeader("subject\tpredicate\tobject", three));
  EXPECT_FALSE(LooksLikeHeader("user\tu17", two));
  EXPECT_FALSE(LooksLikeHeader("/m/027rn\t/location/country\t/m/06cx9", three));
  EXPECT_FALSE(LooksLikeHeader("src", two));  // too few fields
}

TEST_F(ImportBadInputTest, StandardInputIsNamedOnce) {
  const std::string f = Input("e.tsv", "a\tb\n");
  ImportOptions o = Options({"-", f});
  o.valid_files = {"-"};
  o.split = SplitFractions();
  auto refused = ImportGraph(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "standard input")) << refused.status();
  ExpectNothingAt(out_);
}

// A named pipe is read as it comes, in one pass: the same graph as the file.
TEST_F(ImportBadInputTest, NamedPipeImportsLikeTheFile) {
  const std::string text = "a\tr\tb\nb\tr\tc\nc\ts\ta\n";
  const std::string fifo = tmp_.Sub("edges.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::thread writer([&] {
    FILE* w = std::fopen(fifo.c_str(), "w");
    ASSERT_NE(w, nullptr);
    std::fwrite(text.data(), 1, text.size(), w);
    std::fclose(w);
  });
  Result piped = ImportOk(Options({fifo}), /*with_relations=*/true);
  writer.join();
  EXPECT_EQ(piped.summary.input_bytes, text.size());
  ImportOptions o = Options({Input("edges.tsv", text)});
  o.overwrite = true;
  Result file = ImportOk(o, /*with_relations=*/true);
  EXPECT_EQ(piped.split[kTrain], file.split[kTrain]);
  EXPECT_EQ(piped.names, file.names);
  EXPECT_EQ(piped.summary.relations, 2u);
}

// Degree percentiles are the degrees themselves, not their power of two.
TEST_F(ImportBadInputTest, DegreePercentilesAreExact) {
  std::string text;
  for (int h = 0; h < 10; ++h) {
    for (int l = 0; l < 10; ++l) text += absl::StrCat("h", h, "\tl", h, "_", l, "\n");
  }
  Result r = ImportOk(Options({Input("stars.tsv", text)}));
  EXPECT_EQ(r.manifest.degree.max, 10u);
  EXPECT_EQ(r.manifest.degree.p50, 1u);
  EXPECT_EQ(r.manifest.degree.p90, 1u);
  EXPECT_EQ(r.manifest.degree.p99, 10u);  // 10 of 110 nodes: the hubs
}

TEST_F(ImportBadInputTest, ValidAndTestFiles) {
  const std::string train = Input("train.tsv", "a\tb\nb\tc\nc\td\nd\ta\n");
  const std::string valid = Input("valid.tsv", "a\tc\n");
  const std::string test = Input("test.tsv", "b\td\nd\tb\n");
  ImportOptions o = Options({train});
  o.valid_files = {valid};
  o.test_files = {test};
  Result r = ImportOk(o);
  EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}, {"c", "d"}, {"d", "a"}}));
  EXPECT_EQ(r.split[kValid], Pairs({{"a", "c"}}));
  EXPECT_EQ(r.split[kTest], Pairs({{"b", "d"}, {"d", "b"}}));
  EXPECT_EQ(r.summary.edges.train, 4u);
  EXPECT_EQ(r.summary.edges.valid, 1u);
  EXPECT_EQ(r.summary.edges.test, 2u);
  EXPECT_EQ(r.manifest.edges.valid, 1u);
  EXPECT_EQ(r.manifest.edges.test, 2u);
  EXPECT_EQ(r.summary.moved_to_train, 0u);
}

TEST_F(ImportBadInputTest, HeldOutEdgeWithUnseenNodeMovesToTrain) {
  const std::string train = Input("train.tsv", "a\tb\nb\tc\n");
  const std::string valid = Input("valid.tsv", "a\tc\nv\ta\n");   // v: valid only
  const std::string test = Input("test.tsv", "b\ta\nc\tz\nz\tz\n");  // z: test only
  ImportOptions o = Options({train});
  o.valid_files = {valid};
  o.test_files = {test};
  Result r = ImportOk(o);
  EXPECT_EQ(r.summary.moved_to_train, 3u);
  EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}, {"v", "a"},
                                    {"c", "z"}, {"z", "z"}}));
  EXPECT_EQ(r.split[kValid], Pairs({{"a", "c"}}));
  EXPECT_EQ(r.split[kTest], Pairs({{"b", "a"}}));
  EXPECT_EQ(r.summary.edges.train, 5u);
  EXPECT_EQ(r.summary.edges.valid, 1u);
  EXPECT_EQ(r.summary.edges.test, 1u);
  EXPECT_EQ(r.manifest.edges.train, 5u);
  EXPECT_EQ(r.summary.nodes, 5u);
}

// z appears only in the test file: moved to train by default, kept in test
// with `inductive` (z still gets a node row).
TEST_F(ImportBadInputTest, InductiveKeepsHeldOutEdgeWithUnseenNode) {
  const std::string train = Input("train.tsv", "a\tb\nb\tc\n");
  const std::string test = Input("test.tsv", "a\tz\n");
  for (bool inductive : {false, true}) {
    SCOPED_TRACE(inductive ? "inductive" : "default");
    ImportOptions o = Options({train});
    o.out = tmp_.Sub(inductive ? "graph_inductive" : "graph_default");
    o.test_files = {test};
    o.inductive = inductive;
    Result r = ImportOk(o);
    EXPECT_EQ(r.names, (std::vector<std::string>{"a", "b", "c", "z"}));
    EXPECT_EQ(r.summary.edges.valid, 0u);
    EXPECT_EQ(r.manifest.edges.valid, 0u);
    if (inductive) {
      EXPECT_EQ(r.summary.moved_to_train, 0u);
      EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}}));
      EXPECT_EQ(r.split[kTest], Pairs({{"a", "z"}}));
    } else {
      EXPECT_EQ(r.summary.moved_to_train, 1u);
      EXPECT_EQ(r.split[kTrain], Pairs({{"a", "b"}, {"b", "c"}, {"a", "z"}}));
      EXPECT_TRUE(r.split[kTest].empty());
    }
    const uint64_t held_out = inductive ? 1 : 0;
    EXPECT_EQ(r.summary.edges.train, 3u - held_out);
    EXPECT_EQ(r.summary.edges.test, held_out);
    EXPECT_EQ(r.manifest.edges.train, 3u - held_out);
    EXPECT_EQ(r.manifest.edges.test, held_out);
  }
}

TEST_F(ImportBadInputTest, BadLineInValidFileNamesThatFile) {
  const std::string train = Input("train.tsv", "a\tb\nb\tc\n");
  const std::string valid = Input("valid.tsv", "a\tc\n\n#x\nb\n");
  ImportOptions o = Options({train});
  o.valid_files = {valid};
  ExpectBadLine(ImportGraph(o), valid, 4, "too few columns");
}

TEST_F(ImportBadInputTest, MissingInputFile) {
  ImportOptions o = Options({tmp_.Sub("no_such_file.tsv")});
  auto s = ImportGraph(o);
  ASSERT_FALSE(s.ok());
  EXPECT_TRUE(absl::StrContains(s.status().message(), "no_such_file.tsv"))
      << s.status();
  ExpectNothingAt(out_);
}

}  // namespace
}  // namespace ember::import_test
