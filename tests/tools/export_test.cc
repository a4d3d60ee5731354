// ember export: every format read back by an independent reader (C++ parsers
// here; NumPy for .npy) and compared with what the graph holds; sidecars;
// atomicity; the one-partition memory bound.
#include "tools/export/exporter.h"

#include <malloc.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"
#include "train/model/checkpoint.h"

// ---------------------------------------------------------------------------
// Heap accounting for the memory-bound test: every operator new/delete in
// this binary goes through malloc/free and updates the live byte count.
// (GCC cannot see that the replaced new and delete pair up.)
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
namespace {
std::atomic<int64_t> g_live_bytes{0};
std::atomic<int64_t> g_peak_bytes{0};

void NoteAlloc(void* p) {
  if (p == nullptr) return;
  const int64_t live = g_live_bytes.fetch_add(malloc_usable_size(p)) + malloc_usable_size(p);
  int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live)) {
  }
}
void NoteFree(void* p) {
  if (p != nullptr) g_live_bytes.fetch_sub(malloc_usable_size(p));
}
}  // namespace

void* operator new(std::size_t n) {
  void* p = std::malloc(n == 0 ? 1 : n);
  if (p == nullptr) throw std::bad_alloc();
  NoteAlloc(p);
  return p;
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  void* p = std::malloc(n == 0 ? 1 : n);
  NoteAlloc(p);
  return p;
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept {
  return ::operator new(n, t);
}
void operator delete(void* p) noexcept {
  NoteFree(p);
  std::free(p);
}
void operator delete[](void* p) noexcept { ::operator delete(p); }
void operator delete(void* p, std::size_t) noexcept { ::operator delete(p); }
void operator delete[](void* p, std::size_t) noexcept { ::operator delete(p); }

namespace ember::tools {
namespace {

using ::ember::testing::TempDir;
using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunShell;

std::vector<std::string> Split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines = Split(text, '\n');
  EXPECT_TRUE(!lines.empty() && lines.back().empty()) << "text must end with a newline";
  if (!lines.empty()) lines.pop_back();
  return lines;
}

// Bit-exact: the text must round-trip to the stored float.
void ExpectFloatText(const std::string& text, float want, const std::string& where) {
  char* end = nullptr;
  const float got = std::strtof(text.c_str(), &end);
  ASSERT_EQ(*end, '\0') << where << ": '" << text << "' is not a number";
  ASSERT_EQ(std::memcmp(&got, &want, sizeof got), 0)
      << where << ": '" << text << "' parses to " << got << ", stored " << want;
}

// What the graph holds, read through the storage and checkpoint APIs.
struct Expected {
  int dim = 0;
  uint64_t n = 0;
  std::vector<std::string> names;  // by global id
  std::vector<float> rows;         // n x dim
  StoredModel model;
  Manifest manifest;
};

Expected ReadExpected(const std::string& graph_dir) {
  Expected e;
  auto graph = Graph::Open(graph_dir);
  EXPECT_TRUE(graph.ok()) << graph.status();
  auto model = LoadStoredModel(**graph);
  EXPECT_TRUE(model.ok()) << model.status();
  e.model = *model;
  e.manifest = (*graph)->manifest();
  e.dim = model->model.dim;
  e.n = e.manifest.num_nodes;
  for (uint32_t p = 0; p < e.manifest.num_partitions; ++p) {
    EXPECT_EQ(e.manifest.PartitionBase(p), e.names.size());
    auto rows = LoadPartitionEmbeddings(**graph, *model, p);
    EXPECT_TRUE(rows.ok()) << rows.status();
    e.rows.insert(e.rows.end(), rows->begin(), rows->end());
    EXPECT_TRUE((*graph)
                    ->ForEachNodeName(p,
                                      [&](uint32_t, std::string_view name) {
                                        e.names.emplace_back(name);
                                        return absl::OkStatus();
                                      })
                    .ok());
  }
  EXPECT_EQ(e.names.size(), e.n);
  EXPECT_EQ(e.rows.size(), e.n * e.dim);
  return e;
}

// One trained multi-relation graph (3 partitions, named nodes, diagonal
// operator) shared by the format tests.
class ExportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string edges = dir_->Sub("edges.tsv");
    {
      std::ofstream out(edges);
      uint64_t x = 12345;
      for (int i = 0; i < 3000; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const int src = (x >> 33) % 700, dst = (x >> 13) % 700, rel = (x >> 5) % 3;
        out << "node_" << src << "\trel" << rel << "\tnode_" << dst << "\n";
      }
    }
    graph_ = dir_->Sub("g");
    const std::string bin = EMBER_BINARY;
    ASSERT_EQ(RunShell(bin + " import --quiet --partitions 3 --out " + graph_ + " " + edges +
                  " > /dev/null"),
              0);
    ASSERT_EQ(RunShell(bin + " train " + graph_ +
                  " --quiet --epochs 2 --dim 20 --operator diagonal --comparator cos > /dev/null"),
              0);
    expected_ = new Expected(ReadExpected(graph_));
  }
  static void TearDownTestSuite() {
    delete expected_;
    delete dir_;
  }

  absl::StatusOr<ExportStats> Export(ExportFormat format, const std::string& out,
                                     const std::string& relations_out = "") {
    auto graph = Graph::Open(graph_);
    EXPECT_TRUE(graph.ok()) << graph.status();
    ExportOptions o;
    o.out = out;
    o.format = format;
    o.relations_out = relations_out;
    o.threads = 2;
    return ExportEmbeddings(**graph, o);
  }

  void ExpectNamesFile(const std::string& path) {
    const std::vector<std::string> lines = Lines(ReadWholeFile(path));
    ASSERT_EQ(lines.size(), expected_->n);
    for (uint64_t i = 0; i < expected_->n; ++i) ASSERT_EQ(lines[i], expected_->names[i]) << i;
  }

  static TempDir* dir_;
  static std::string graph_;
  static Expected* expected_;
};
TempDir* ExportTest::dir_ = nullptr;
std::string ExportTest::graph_;
Expected* ExportTest::expected_ = nullptr;

TEST_F(ExportTest, TsvRoundTrips) {
  TempDir tmp;
  const std::string out = tmp.Sub("emb.tsv");
  auto stats = Export(ExportFormat::kTsv, out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  const Expected& e = *expected_;
  EXPECT_EQ(stats->rows, e.n);
  EXPECT_EQ(stats->bytes, std::filesystem::file_size(out));
  const std::vector<std::string> lines = Lines(ReadWholeFile(out));
  ASSERT_EQ(lines.size(), e.n);
  for (uint64_t i = 0; i < e.n; ++i) {
    const std::vector<std::string> f = Split(lines[i], '\t');
    ASSERT_EQ(f.size(), size_t(e.dim) + 1) << "line " << i;
    ASSERT_EQ(f[0], e.names[i]);
    for (int j = 0; j < e.dim; ++j) {
      ExpectFloatText(f[j + 1], e.rows[i * e.dim + j], "tsv line " + std::to_string(i));
    }
  }
  EXPECT_FALSE(std::filesystem::exists(out + ".names.tsv"));
  EXPECT_TRUE(std::filesystem::exists(out + ".meta.json"));
}

TEST_F(ExportTest, W2vRoundTrips) {
  TempDir tmp;
  const std::string out = tmp.Sub("emb.w2v");
  auto stats = Export(ExportFormat::kW2v, out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  const Expected& e = *expected_;
  const std::vector<std::string> lines = Lines(ReadWholeFile(out));
  ASSERT_EQ(lines.size(), e.n + 1);
  EXPECT_EQ(lines[0], std::to_string(e.n) + " " + std::to_string(e.dim));
  for (uint64_t i = 0; i < e.n; ++i) {
    const std::vector<std::string> f = Split(lines[i + 1], ' ');
    ASSERT_EQ(f.size(), size_t(e.dim) + 1) << "row " << i;
    ASSERT_EQ(f[0], e.names[i]);
    for (int j = 0; j < e.dim; ++j) {
      ExpectFloatText(f[j + 1], e.rows[i * e.dim + j], "w2v row " + std::to_string(i));
    }
  }
}

TEST_F(ExportTest, FvecsRoundTrips) {
  TempDir tmp;
  const std::string out = tmp.Sub("emb.fvecs");
  auto stats = Export(ExportFormat::kFvecs, out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  const Expected& e = *expected_;
  const std::string bytes = ReadWholeFile(out);
  const size_t row_bytes = 4 + 4 * size_t(e.dim);
  ASSERT_EQ(bytes.size(), e.n * row_bytes);
  for (uint64_t i = 0; i < e.n; ++i) {
    const unsigned char* p = reinterpret_cast<const unsigned char*>(bytes.data() + i * row_bytes);
    // Little-endian int32 dimension, decoded byte by byte.
    const uint32_t d = p[0] | (p[1] << 8) | (p[2] << 16) | (uint32_t(p[3]) << 24);
    ASSERT_EQ(d, uint32_t(e.dim)) << "row " << i;
    for (int j = 0; j < e.dim; ++j) {
      const unsigned char* q = p + 4 + 4 * j;
      const uint32_t bits = q[0] | (q[1] << 8) | (q[2] << 16) | (uint32_t(q[3]) << 24);
      float f;
      std::memcpy(&f, &bits, 4);
      ASSERT_EQ(std::memcmp(&f, &e.rows[i * e.dim + j], 4), 0) << "row " << i << " col " << j;
    }
  }
  ExpectNamesFile(out + ".names.tsv");
}

// The .npy file is read by NumPy itself (Debian's python3-numpy; installed by
// tools/install-deps.sh). Missing python3 or numpy fails the test.
TEST_F(ExportTest, NpyLoadsInNumpy) {
  TempDir tmp;
  const std::string out = tmp.Sub("emb.npy");
  auto stats = Export(ExportFormat::kNpy, out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  const Expected& e = *expected_;
  // Header: magic, version, 64-byte aligned data.
  const std::string bytes = ReadWholeFile(out);
  ASSERT_GE(bytes.size(), 10u);
  EXPECT_EQ(bytes.substr(0, 6), std::string("\x93NUMPY", 6));
  const size_t header_len = uint8_t(bytes[8]) | (uint8_t(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + header_len + e.n * e.dim * 4);

  const std::string python =
      std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
  const std::string script = tmp.Sub("check.py");
  {
    std::ofstream py(script);
    py << "import sys\n"
          "import numpy as np\n"
          "a = np.load(sys.argv[1])\n"
          "assert a.dtype == np.dtype('<f4'), a.dtype\n"
          "assert a.flags['C_CONTIGUOUS']\n"
          "print(a.shape[0], a.shape[1])\n"
          "w = np.arange(a.size, dtype=np.float64).reshape(a.shape) % 7 + 1\n"
          "print(repr(float(a.astype(np.float64).sum())))\n"
          "print(repr(float((a.astype(np.float64) * w).sum())))\n"
          "for i, j in [(0, 0), (a.shape[0] - 1, a.shape[1] - 1), (a.shape[0] // 2, 3)]:\n"
          "    print(a[i, j].view(np.uint32))\n";
  }
  const std::string result = tmp.Sub("result.txt");
  ASSERT_EQ(RunShell(python + " " + script + " " + out + " > " + result), 0)
      << "python3 with numpy is required (tools/install-deps.sh installs python3-numpy)";
  std::ifstream in(result);
  uint64_t rows = 0, cols = 0;
  double sum = 0, weighted = 0;
  in >> rows >> cols >> sum >> weighted;
  ASSERT_TRUE(in) << ReadWholeFile(result);
  EXPECT_EQ(rows, e.n);
  EXPECT_EQ(cols, uint64_t(e.dim));
  double want_sum = 0, want_weighted = 0;
  for (uint64_t i = 0; i < e.rows.size(); ++i) {
    want_sum += e.rows[i];
    want_weighted += double(e.rows[i]) * double(i % 7 + 1);
  }
  EXPECT_NEAR(sum, want_sum, 1e-9 * (1 + std::abs(want_sum)));
  EXPECT_NEAR(weighted, want_weighted, 1e-9 * (1 + std::abs(want_weighted)));
  const std::pair<uint64_t, uint64_t> probes[] = {
      {0, 0}, {e.n - 1, uint64_t(e.dim - 1)}, {e.n / 2, 3}};
  for (auto [i, j] : probes) {
    uint32_t bits = 0;
    in >> bits;
    uint32_t want;
    std::memcpy(&want, &e.rows[i * e.dim + j], 4);
    EXPECT_EQ(bits, want) << "a[" << i << ", " << j << "]";
  }
  ExpectNamesFile(out + ".names.tsv");
}

TEST_F(ExportTest, MetaJsonAndRelations) {
  TempDir tmp;
  const std::string out = tmp.Sub("emb.tsv");
  const std::string rels = tmp.Sub("rels.tsv");
  auto stats = Export(ExportFormat::kTsv, out, rels);
  ASSERT_TRUE(stats.ok()) << stats.status();
  const Expected& e = *expected_;
  const nlohmann::json meta = nlohmann::json::parse(ReadWholeFile(out + ".meta.json"));
  EXPECT_EQ(meta["dimension"], e.dim);
  EXPECT_EQ(meta["count"], e.n);
  EXPECT_EQ(meta["operator"], "diagonal");
  EXPECT_EQ(meta["featurized"], "off");
  EXPECT_EQ(meta["comparator"], "cos");
  EXPECT_EQ(meta["metric"], "cosine");
  EXPECT_EQ(meta["normalize"], true);
  EXPECT_EQ(meta["format"], "tsv");
  EXPECT_EQ(meta["checkpoint_version"], e.model.version);
  EXPECT_GT(e.model.version, 0u);
  ASSERT_EQ(meta["relations"].size(), e.manifest.relations.size());
  ASSERT_EQ(e.manifest.relations.size(), 3u);
  ASSERT_EQ(e.model.relations.param_size, e.dim);
  for (size_t r = 0; r < e.manifest.relations.size(); ++r) {
    EXPECT_EQ(meta["relations"][r]["name"], e.manifest.relations[r]);
    ASSERT_EQ(meta["relations"][r]["parameters"].size(), size_t(e.dim));
    for (int j = 0; j < e.dim; ++j) {
      EXPECT_EQ(meta["relations"][r]["parameters"][j].get<float>(),
                e.model.relations.Of(r)[j]);
    }
  }
  const std::vector<std::string> lines = Lines(ReadWholeFile(rels));
  ASSERT_EQ(lines.size(), e.manifest.relations.size());
  for (size_t r = 0; r < lines.size(); ++r) {
    const std::vector<std::string> f = Split(lines[r], '\t');
    ASSERT_EQ(f.size(), size_t(e.dim) + 1);
    EXPECT_EQ(f[0], e.manifest.relations[r]);
    for (int j = 0; j < e.dim; ++j) {
      ExpectFloatText(f[j + 1], e.model.relations.Of(r)[j], "relation " + f[0]);
    }
  }
  // Diagonal parameters moved away from their initial ones during training.
  bool trained = false;
  for (float x : e.model.relations.params) trained |= x != 1.0f;
  EXPECT_TRUE(trained);
  EXPECT_EQ(meta["reciprocal"], false);
  EXPECT_FALSE(meta["relations"][0].contains("inverse_parameters"));
}

// A reciprocal model: --relations-out writes each relation's w_r, then
// each inverse's w_{r⁻¹} as name_inv (line R + r), and the meta file
// carries both.
TEST(ReciprocalExportTest, InverseRelationsFollowTheirRelations) {
  TempDir tmp;
  const std::string edges = tmp.Sub("edges.tsv");
  {
    std::ofstream out(edges);
    for (int i = 0; i < 600; ++i) {
      out << "n" << i % 97 << "\tr" << i % 2 << "\tn" << (i * 7 + 3) % 97 << "\n";
    }
  }
  const std::string graph = tmp.Sub("g");
  const std::string bin = EMBER_BINARY;
  ASSERT_EQ(RunShell(bin + " import --quiet --out " + graph + " " + edges + " > /dev/null"), 0);
  ASSERT_EQ(RunShell(bin + " train " + graph + " --quiet --epochs 1 --dim 6 --lr 0.1 " +
                     "--operator diagonal --reciprocal > /dev/null"),
            0);
  const Expected e = ReadExpected(graph);
  ASSERT_TRUE(e.model.model.reciprocal);
  ASSERT_EQ(e.model.relations.param_size, 12);
  const std::string out = tmp.Sub("emb.tsv"), rels = tmp.Sub("rels.tsv");
  ASSERT_EQ(RunShell(bin + " export " + graph + " --quiet --out " + out + " --relations-out " +
                     rels + " > /dev/null"),
            0);
  const std::vector<std::string> lines = Lines(ReadWholeFile(rels));
  ASSERT_EQ(lines.size(), 4u);
  const nlohmann::json meta = nlohmann::json::parse(ReadWholeFile(out + ".meta.json"));
  EXPECT_EQ(meta["reciprocal"], true);
  for (size_t line = 0; line < 4; ++line) {
    const size_t r = line % 2;
    const bool inverse = line >= 2;
    const std::vector<std::string> f = Split(lines[line], '\t');
    ASSERT_EQ(f.size(), 7u) << lines[line];
    EXPECT_EQ(f[0], e.manifest.relations[r] + (inverse ? "_inv" : ""));
    const nlohmann::json& params =
        meta["relations"][r][inverse ? "inverse_parameters" : "parameters"];
    ASSERT_EQ(params.size(), 6u);
    for (int j = 0; j < 6; ++j) {
      const float want = e.model.relations.Of(r)[(inverse ? 6 : 0) + j];
      ExpectFloatText(f[j + 1], want, f[0]);
      EXPECT_EQ(params[j].get<float>(), want);
    }
  }
  // The inverses trained apart from their relations.
  EXPECT_NE(lines[0].substr(3), lines[2].substr(7));
}

bool HasTempFiles(const std::string& dir) {
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().filename().string().find(".tmp-") != std::string::npos) return true;
  }
  return false;
}

TEST_F(ExportTest, RefusesExistingOutputUnlessOverwrite) {
  TempDir tmp;
  const std::string out = tmp.Sub("emb.tsv");
  { std::ofstream(out) << "old\n"; }
  auto stats = Export(ExportFormat::kTsv, out);
  ASSERT_FALSE(stats.ok());
  EXPECT_TRUE(absl::IsAlreadyExists(stats.status())) << stats.status();
  EXPECT_NE(std::string(stats.status().message()).find(out), std::string::npos);
  EXPECT_EQ(ReadWholeFile(out), "old\n");
  EXPECT_FALSE(HasTempFiles(tmp.path()));

  // Through the CLI: non-zero exit, file untouched, also with --overwrite
  // (the file is the user's, not ember's); --overwrite replaces ember's own.
  const std::string bin = EMBER_BINARY;
  EXPECT_NE(RunShell(bin + " export " + graph_ + " --quiet --format tsv --out " + out +
                " > /dev/null 2>&1"),
            0);
  EXPECT_EQ(ReadWholeFile(out), "old\n");
  const std::string overwrite =
      bin + " export " + graph_ + " --quiet --format tsv --overwrite --out " + out;
  EXPECT_NE(RunShell(overwrite + " > /dev/null 2>&1"), 0);
  EXPECT_EQ(ReadWholeFile(out), "old\n");
  std::filesystem::remove(out);
  EXPECT_EQ(RunShell(overwrite + " > /dev/null"), 0);
  EXPECT_EQ(RunShell(overwrite + " > /dev/null"), 0);
  EXPECT_EQ(Lines(ReadWholeFile(out)).size(), expected_->n);
  EXPECT_FALSE(HasTempFiles(tmp.path()));
}

// The sidecars obey --overwrite as PATH does: a user's file that happens to
// stand at PATH.meta.json or PATH.names.tsv is never replaced silently.
TEST_F(ExportTest, RefusesExistingSidecarUnlessOverwrite) {
  for (const char* sidecar : {".meta.json", ".names.tsv"}) {
    SCOPED_TRACE(sidecar);
    TempDir tmp;
    const std::string out = tmp.Sub("emb.npy");
    { std::ofstream(out + sidecar) << "mine\n"; }
    auto stats = Export(ExportFormat::kNpy, out);
    ASSERT_FALSE(stats.ok());
    EXPECT_TRUE(absl::IsAlreadyExists(stats.status())) << stats.status();
    EXPECT_TRUE(absl::StrContains(stats.status().message(), out + sidecar)) << stats.status();
    EXPECT_EQ(ReadWholeFile(out + sidecar), "mine\n");
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_FALSE(HasTempFiles(tmp.path()));
  }
}

TEST_F(ExportTest, FailureLeavesNothingBehind) {
  for (ExportFormat format :
       {ExportFormat::kTsv, ExportFormat::kNpy, ExportFormat::kW2v, ExportFormat::kFvecs}) {
    SCOPED_TRACE(std::string(ExportFormatName(format)));
    TempDir tmp;
    auto graph = Graph::Open(graph_);
    ASSERT_TRUE(graph.ok());
    ExportOptions o;
    o.out = tmp.Sub("emb");
    o.format = format;
    o.relations_out = tmp.Sub("rels.tsv");
    o.fail_after_rows = 300;  // mid-way through partition 1
    auto stats = ExportEmbeddings(**graph, o);
    ASSERT_FALSE(stats.ok());
    EXPECT_TRUE(absl::IsAborted(stats.status())) << stats.status();
    EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "files left behind";

    // A failed --overwrite keeps the old file whole.
    { std::ofstream(o.out) << "old\n"; }
    o.overwrite = true;
    stats = ExportEmbeddings(**graph, o);
    ASSERT_FALSE(stats.ok());
    EXPECT_EQ(ReadWholeFile(o.out), "old\n");
    EXPECT_FALSE(HasTempFiles(tmp.path()));
  }
  // An output directory that does not exist: a clean error, nothing created.
  TempDir tmp;
  auto graph = Graph::Open(graph_);
  ExportOptions o;
  o.out = tmp.Sub("missing/emb.tsv");
  auto stats = ExportEmbeddings(**graph, o);
  ASSERT_FALSE(stats.ok());
  EXPECT_NE(std::string(stats.status().message()).find("missing"), std::string::npos);
}

TEST_F(ExportTest, ParsesFormats) {
  EXPECT_EQ(*ParseExportFormat("npy"), ExportFormat::kNpy);
  EXPECT_EQ(*ParseExportFormat("fvecs"), ExportFormat::kFvecs);
  auto bad = ParseExportFormat("csv");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("tsv, npy, w2v, fvecs"), std::string::npos);
}

TEST(ExportUntrainedTest, NeedsACheckpoint) {
  TempDir tmp;
  const std::string edges = tmp.Sub("e.tsv");
  { std::ofstream(edges) << "a\tb\nb\tc\n"; }
  const std::string bin = EMBER_BINARY;
  ASSERT_EQ(RunShell(bin + " import --quiet --out " + tmp.Sub("g") + " " + edges + " > /dev/null"), 0);
  auto graph = Graph::Open(tmp.Sub("g"));
  ASSERT_TRUE(graph.ok());
  ExportOptions o;
  o.out = tmp.Sub("emb.tsv");
  auto stats = ExportEmbeddings(**graph, o);
  ASSERT_FALSE(stats.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(stats.status())) << stats.status();
  EXPECT_FALSE(std::filesystem::exists(o.out));
}

// 8 partitions of ~8 MB of embeddings each (64 MB in all): the exporter holds
// one partition at a time. Checked twice: by its own row counter, and by the
// heap (peak live bytes during the export, every allocation in the process
// counted), which must stay below what loading one partition costs storage
// plus one more partition.
TEST_F(ExportTest, AnExportOverTheMemoryBudgetIsRefusedBeforeAnyOutput) {
  TempDir tmp;
  const std::string out = tmp.Sub("emb.npy");
  auto graph = Graph::Open(graph_);
  ASSERT_TRUE(graph.ok());
  const uint64_t need = ExportMemoryBytes((*graph)->manifest(), 20);
  ExportOptions o;
  o.out = out;
  o.format = ExportFormat::kNpy;
  o.memory_budget = need - 1;
  auto refused = ExportEmbeddings(**graph, o);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(std::string(refused.status().message()).find("over the memory budget"),
            std::string::npos)
      << refused.status();
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(HasTempFiles(tmp.path()));
  // Through the CLI: refused at need - 1 naming the need, written at need.
  const std::string bin = EMBER_BINARY;
  const std::string err = tmp.Sub("err");
  EXPECT_NE(RunShell(bin + " export " + graph_ + " --quiet --format npy --out " + out +
                     " --memory-budget " + std::to_string(need - 1) + " 2> " + err),
            0);
  EXPECT_NE(ReadWholeFile(err).find("raise --memory-budget"), std::string::npos)
      << ReadWholeFile(err);
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(RunShell(bin + " export " + graph_ + " --quiet --format npy --out " + out +
                     " --memory-budget " + std::to_string(need) + " > /dev/null"),
            0);
  EXPECT_TRUE(std::filesystem::exists(out));
}

TEST(ExportMemoryTest, HoldsOnePartitionAtATime) {
  TempDir tmp;
  const std::string edges = tmp.Sub("ring.tsv");
  constexpr int kNodes = 65536, kDim = 256;
  {
    std::ofstream out(edges);
    for (int i = 0; i < kNodes; ++i) out << i << "\t" << (i + 1) % kNodes << "\n";
  }
  const std::string g = tmp.Sub("g");
  const std::string bin = EMBER_BINARY;
  ASSERT_EQ(RunShell(bin + " import --quiet --integer-ids --partitions 8 --out " + g + " " + edges +
                " > /dev/null"),
            0);
  ASSERT_EQ(RunShell(bin + " train " + g + " --quiet --epochs 1 --dim " + std::to_string(kDim) +
                " > /dev/null"),
            0);
  auto graph = Graph::Open(g);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const Manifest& m = (*graph)->manifest();
  ASSERT_EQ(m.num_partitions, 8u);
  uint64_t largest = 0;
  for (uint64_t s : m.partition_sizes) largest = std::max(largest, s);
  const int64_t partition_bytes = int64_t(largest) * kDim * 4;
  const int64_t table_bytes = int64_t(kNodes) * kDim * 4;

  // What storage itself needs to load the largest partition (RocksDB reads
  // its values into heap blocks on the way).
  int64_t load_peak = 0;
  {
    auto model = LoadStoredModel(**graph);
    ASSERT_TRUE(model.ok());
    for (uint32_t p = 0; p < m.num_partitions; ++p) {
      const int64_t baseline = g_live_bytes.load();
      g_peak_bytes.store(baseline);
      auto rows = LoadPartitionEmbeddings(**graph, *model, p);
      ASSERT_TRUE(rows.ok());
      load_peak = std::max(load_peak, g_peak_bytes.load() - baseline);
    }
  }
  std::printf("[ load ] peak heap loading one partition %.1f MB\n", load_peak / 1e6);
  for (ExportFormat format : {ExportFormat::kNpy, ExportFormat::kTsv, ExportFormat::kFvecs}) {
    SCOPED_TRACE(std::string(ExportFormatName(format)));
    ExportOptions o;
    o.out = tmp.Sub(std::string("emb.") + std::string(ExportFormatName(format)));
    o.format = format;
    o.threads = 2;
    const int64_t baseline = g_live_bytes.load();
    g_peak_bytes.store(baseline);
    auto stats = ExportEmbeddings(**graph, o);
    const int64_t peak = g_peak_bytes.load() - baseline;
    ASSERT_TRUE(stats.ok()) << stats.status();
    EXPECT_EQ(stats->rows, uint64_t(kNodes));
    EXPECT_EQ(stats->peak_rows_held, largest);
    EXPECT_LT(stats->peak_rows_held, uint64_t(kNodes) / 4);
    std::printf("[ %s ] peak heap during export %.1f MB; one partition %.1f MB; all %.1f MB\n",
                std::string(ExportFormatName(format)).c_str(), peak / 1e6, partition_bytes / 1e6,
                table_bytes / 1e6);
    // Storage's cost of loading one partition plus fixed buffers (1 MB write
    // buffer, <= 2.2 MB of text): less than holding one more partition.
    EXPECT_LT(peak, load_peak + partition_bytes);
    EXPECT_LT(peak, table_bytes);
    // What --memory-budget is checked against covers the heap measured.
    EXPECT_LE(peak, int64_t(ExportMemoryBytes(m, kDim)));
  }
}

}  // namespace
}  // namespace ember::tools
