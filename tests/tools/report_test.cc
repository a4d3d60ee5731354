// tools/report/report.py end to end: two small runs of `ember train --eval-valid`
// (different dim and lr) and their `ember eval --json` results are turned
// into a report, and the images are checked by parsing them, not by eye:
// PNG signature, IHDR width and height, a complete chunk stream; SVG parsed
// by an XML parser; and the series each plot drew, from the report.json
// manifest that the script writes from the plotted artists themselves. The
// bench scripts' --json-out files are drawn by the same report.
//
// Needs python3 with matplotlib (tools/install-deps.sh installs
// python3-matplotlib); without it the tests fail, saying so.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "nlohmann/json.hpp"
#include "tests/storage/test_graph.h"
#include "train/model/bf16_gemm.h"
#include "tests/test_process.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ember {
namespace {

using ::ember::testing::ProcessResult;
using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunProcess;
using ::ember::testing::TempDir;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const std::string kEmber = EMBER_BINARY;
const std::string kReport = std::string(EMBER_SOURCE_DIR) + "/tools/report/report.py";

std::string Python() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3"
                                                     : "python3";
}

// Runs `ember args...`; its result, with a failure recorded unless it exits 0.
ProcessResult Ember(const std::vector<std::string> &args,
                    const std::string &capture_dir) {
  std::vector<std::string> argv = {kEmber};
  argv.insert(argv.end(), args.begin(), args.end());
  ProcessResult r = RunProcess(argv, capture_dir);
  EXPECT_EQ(r.exit_code, 0) << "ember " << args[0] << ": " << r.err;
  return r;
}

// Runs tools/report/report.py with `args` through python3 (found in PATH when
// /usr/bin/python3 is absent, via /usr/bin/env).
ProcessResult Report(const std::vector<std::string> &args,
                     const std::string &capture_dir) {
  std::vector<std::string> argv = {"/usr/bin/env", Python(), kReport};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunProcess(argv, capture_dir);
}

void ExpectMatplotlib(const ProcessResult &r) {
  ASSERT_THAT(r.err, ::testing::Not(HasSubstr("needs matplotlib")))
      << "install python3-matplotlib (tools/install-deps.sh)";
}

uint32_t BigEndian32(const std::string &b, size_t at) {
  return uint32_t(uint8_t(b[at])) << 24 | uint32_t(uint8_t(b[at + 1])) << 16 |
         uint32_t(uint8_t(b[at + 2])) << 8 | uint32_t(uint8_t(b[at + 3]));
}

// The width and height of a PNG file, read from its IHDR chunk after
// checking the signature and that the chunks run, length by length, to an
// IEND at the very end of the file; nullopt (and a failure) otherwise.
std::optional<std::pair<uint32_t, uint32_t>> PngSize(const std::string &path) {
  const std::string b = ReadWholeFile(path);
  const std::string signature("\x89PNG\r\n\x1a\n", 8);
  if (b.size() < 33 || b.compare(0, 8, signature) != 0) {
    ADD_FAILURE() << path << ": no PNG signature";
    return std::nullopt;
  }
  if (BigEndian32(b, 8) != 13 || b.compare(12, 4, "IHDR") != 0) {
    ADD_FAILURE() << path << ": the first chunk is not a 13-byte IHDR";
    return std::nullopt;
  }
  size_t at = 8;
  std::string type;
  while (at + 12 <= b.size()) {
    type = b.substr(at + 4, 4);
    at += 12 + BigEndian32(b, at); // length, type, data, CRC
    if (type == "IEND")
      break;
  }
  if (type != "IEND" || at != b.size()) {
    ADD_FAILURE() << path
                  << ": chunks do not end on IEND at the end of the file";
    return std::nullopt;
  }
  return std::make_pair(BigEndian32(b, 16), BigEndian32(b, 20));
}

nlohmann::json ReadJson(const std::string &path) {
  nlohmann::json j = nlohmann::json::parse(ReadWholeFile(path), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path << ": not JSON";
  return j;
}

// The manifest's entry for `file` (null if absent).
nlohmann::json Plot(const nlohmann::json &manifest, const std::string &file) {
  for (const auto &p : manifest["plots"]) {
    if (p["file"] == file)
      return p;
  }
  ADD_FAILURE() << "report.json lists no " << file;
  return nullptr;
}

// "label:kind:points" of each series of a plot's panel, as drawn.
std::vector<std::string> Series(const nlohmann::json &plot, size_t panel) {
  std::vector<std::string> out;
  if (plot.is_null() || panel >= plot["panels"].size())
    return out;
  for (const auto &s : plot["panels"][panel]["series"]) {
    out.push_back(s["label"].get<std::string>() + ":" +
                  s["kind"].get<std::string>() + ":" +
                  std::to_string(s["points"].get<int>()));
  }
  return out;
}

// Two runs on one SBM graph, trained 3 epochs each with validation after
// each epoch: "dim16" (dim 16, lr 0.1) and "dim32" (dim 32, lr 0.05), and
// the test split of each evaluated. Built once for the suite; read only.
class ReportTest : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string d = dir_->path();
    Ember({"gen", "sbm", "--nodes", "1000", "--blocks", "10", "--avg-degree",
           "10", "--seed", "1", "--out", d + "/sbm.tsv", "--labels-out",
           d + "/labels.tsv", "--quiet"},
          d);
    const std::pair<const char *, std::vector<std::string>> runs[] = {
        {"dim16", {"--dim", "16", "--lr", "0.1"}},
        {"dim32", {"--dim", "32", "--lr", "0.05"}}};
    for (const auto &[name, flags] : runs) {
      const std::string graph = d + "/" + name;
      Ember({"import", "--out", graph, "--partitions", "2", "--split",
             "0.9,0.05,0.05", "--seed", "1", "--quiet", d + "/sbm.tsv"},
            d);
      std::vector<std::string> train = {
          "train",     graph, "--eval-valid", "--epochs", "3",
          "--threads", "2",   "--seed",       "1",        "--quiet"};
      train.insert(train.end(), flags.begin(), flags.end());
      Ember(train, d);
      const ProcessResult eval = Ember({"eval", graph, "--json", "--quiet"}, d);
      std::ofstream(graph + ".eval.json") << eval.out;
    }
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }
  static std::string Run(const std::string &name) {
    return dir_->path() + "/" + name;
  }

  // The report of both runs and their evals, in format `format`, into
  // tmp_/report; exits 0.
  std::string RenderTwoRuns(const std::string &format) {
    const std::string out = tmp_.Sub("report");
    const ProcessResult r = Report(
        {Run("dim16"), Run("dim32"), "--eval", Run("dim16.eval.json"), "--eval",
         Run("dim32.eval.json"), "--format", format, "--out", out},
        tmp_.path());
    ExpectMatplotlib(r);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return out;
  }

  static TempDir *dir_;
  TempDir tmp_;
};

TempDir *ReportTest::dir_ = nullptr;

TEST_F(ReportTest, TwoRunsPlotsAreValidPngsOfTheStatedSizeWithOneSeriesPerRun) {
  const std::string out = RenderTwoRuns("png");
  const nlohmann::json manifest = ReadJson(out + "/report.json");
  ASSERT_TRUE(manifest.is_object());
  ASSERT_EQ(manifest["runs"].size(), 2u);
  EXPECT_EQ(manifest["runs"][0]["label"], "dim16");
  EXPECT_EQ(manifest["runs"][1]["label"], "dim32");
  EXPECT_EQ(manifest["runs"][0]["epochs"], 3);

  // Every plot the manifest lists, at its stated size; the sizes are fixed.
  const std::vector<std::pair<std::string, std::pair<uint32_t, uint32_t>>>
      want = {{"loss.png", {800, 480}},       {"valid_mrr.png", {800, 480}},
              {"throughput.png", {800, 480}}, {"batch_spread.png", {1000, 480}},
              {"overview.png", {1200, 800}},  {"eval.png", {800, 480}}};
  ASSERT_EQ(manifest["plots"].size(), want.size());
  for (const auto &[file, size] : want) {
    const auto png = PngSize(out + "/" + file);
    ASSERT_TRUE(png.has_value()) << file;
    EXPECT_EQ(*png, size) << file;
    const nlohmann::json plot = Plot(manifest, file);
    EXPECT_EQ(plot["width"], png->first) << file;
    EXPECT_EQ(plot["height"], png->second) << file;
  }

  // One line per run, a point per epoch; validation MRR with its 95 % band.
  EXPECT_THAT(Series(Plot(manifest, "loss.png"), 0),
              ElementsAre("dim16:line:3", "dim32:line:3"));
  EXPECT_THAT(Series(Plot(manifest, "valid_mrr.png"), 0),
              ElementsAre("dim16:line:3", "dim32:line:3", "dim16 95 %:band:3",
                          "dim32 95 %:band:3"));
  EXPECT_THAT(Series(Plot(manifest, "throughput.png"), 0),
              ElementsAre("dim16:line:3", "dim32:line:3"));
  const nlohmann::json spread = Plot(manifest, "batch_spread.png");
  EXPECT_THAT(Series(spread, 0),
              ElementsAre("dim16 time:line:3", "dim32 time:line:3"));
  EXPECT_THAT(Series(spread, 1), ElementsAre("dim16:line:3", "dim32:line:3"));
  EXPECT_EQ(Plot(manifest, "overview.png")["panels"].size(), 4u);
  // MRR, Hits@1, Hits@10 of each run's test split.
  EXPECT_THAT(Series(Plot(manifest, "eval.png"), 0),
              ElementsAre("dim16:bar:3", "dim32:bar:3"));

  // The table puts the runs side by side and links every image.
  const std::string index = ReadWholeFile(out + "/index.md");
  EXPECT_THAT(index, HasSubstr("| | dim16 | dim32 |"));
  EXPECT_THAT(index, HasSubstr("dim 16, lr 0.1"));
  EXPECT_THAT(index, HasSubstr("dim 32, lr 0.05"));
  EXPECT_THAT(index, HasSubstr("| valid MRR, last epoch | 0."));
  EXPECT_THAT(index, HasSubstr("| test MRR (filtered) | 0."));
  EXPECT_THAT(index, HasSubstr("filtered ranking against all 1000 nodes"));
  for (const auto &[file, size] : want)
    EXPECT_THAT(index, HasSubstr("](" + file + ")"));
}

TEST_F(ReportTest, SvgPlotsParseAsXmlWithTheRunLabels) {
  const std::string out = RenderTwoRuns("svg");
  const nlohmann::json manifest = ReadJson(out + "/report.json");
  ASSERT_TRUE(manifest.is_object());
  EXPECT_EQ(manifest["format"], "svg");
  EXPECT_THAT(Series(Plot(manifest, "loss.svg"), 0),
              ElementsAre("dim16:line:3", "dim32:line:3"));
  // Python's XML parser reads each file; it prints the root's tag, width and
  // height, and how many text elements carry each run's label: one legend
  // entry a figure, three in the overview (the batch-time panel's entries
  // read "dim16 time").
  const std::string check = tmp_.Sub("check.py");
  std::ofstream(check)
      << "import sys, xml.etree.ElementTree as ET\n"
         "ns = '{http://www.w3.org/2000/svg}'\n"
         "root = ET.parse(sys.argv[1]).getroot()\n"
         "texts = [''.join(t.itertext()) for t in root.iter(ns + 'text')]\n"
         "print(root.tag == ns + 'svg', root.get('width'), "
         "root.get('height'),\n"
         "      sum(t == 'dim16' for t in texts), sum(t == 'dim32' for t in "
         "texts))\n";
  const std::pair<const char *, const char *> want[] = {
      {"loss.svg", "True 576pt 345.6pt 1 1"},
      {"valid_mrr.svg", "True 576pt 345.6pt 1 1"},
      {"overview.svg", "True 864pt 576pt 3 3"}};
  for (const auto &[file, line] : want) {
    const ProcessResult r = RunProcess(
        {"/usr/bin/env", Python(), check, out + "/" + file}, tmp_.path());
    EXPECT_EQ(r.exit_code, 0) << file << ": " << r.err;
    EXPECT_EQ(r.out, std::string(line) + "\n") << file;
  }
}

TEST_F(ReportTest,
       MetricsOfARestartedRunKeepTheLastTrainingAndNoValidationMeansNoMrrPlot) {
  // A graph trained again from scratch appends epochs starting over at 1.
  const std::string metrics = tmp_.Sub("restarted.jsonl");
  {
    std::ofstream f(metrics);
    for (int epoch : {1, 2, 1, 2, 3}) {
      f << R"({"epoch":)" << epoch << R"(,"loss":)" << 10 - epoch
        << R"(,"edges":100,"seconds":0.1,"edges_per_second":1000,"batches":2,)"
        << R"("batch_seconds_cv":0.1,"batch_nnz_cv":0,"idle_share":0.01,"partition_loads":0})"
        << "\n";
    }
  }
  const std::string out = tmp_.Sub("report");
  const ProcessResult r =
      Report({"again=" + metrics, "--out", out}, tmp_.path());
  ExpectMatplotlib(r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json manifest = ReadJson(out + "/report.json");
  ASSERT_TRUE(manifest.is_object());
  EXPECT_EQ(manifest["runs"][0]["epochs"], 3);
  EXPECT_THAT(Series(Plot(manifest, "loss.png"), 0),
              ElementsAre("again:line:3"));
  for (const auto &p : manifest["plots"])
    EXPECT_NE(p["file"], "valid_mrr.png");
  EXPECT_FALSE(std::filesystem::exists(out + "/valid_mrr.png"));
  // The overview keeps its validation panel, empty but for a note.
  EXPECT_THAT(Series(Plot(manifest, "overview.png"), 1), ElementsAre());
  EXPECT_THAT(ReadWholeFile(out + "/index.md"),
              HasSubstr("| epochs | 3 (1 restarts) |"));
}

TEST_F(ReportTest, BadInputFailsNamingTheFile) {
  // A graph directory that was never trained.
  ProcessResult r = Report({tmp_.path(), "--out", tmp_.Sub("r1")}, tmp_.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(tmp_.path() + "/metrics.jsonl: not found"));
  // A line that is not JSON.
  const std::string bad = tmp_.Sub("bad.jsonl");
  std::ofstream(bad) << "{\"epoch\":1,\"loss\":2}\nnot json\n";
  r = Report({bad, "--out", tmp_.Sub("r2")}, tmp_.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(bad + ":2: not JSON"));
  // An eval file that is not `ember eval --json` output.
  r = Report({"--eval", bad, "--out", tmp_.Sub("r3")}, tmp_.path());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr(bad + ": not a JSON eval result"));
  // Nothing to report.
  r = Report({"--out", tmp_.Sub("r4")}, tmp_.path());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_THAT(r.err, HasSubstr("nothing to report"));
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("r4")));
}

// The report's directory is replaced only when the script made it: a
// folder of the user's is refused and left as it was; an existing report
// needs --overwrite.
TEST_F(ReportTest, RefusesADirectoryItDidNotMake) {
  const std::string mine = tmp_.Sub("mine");
  std::filesystem::create_directory(mine);
  std::ofstream(mine + "/notes.txt") << "keep me";
  ProcessResult r = Report({Run("dim16"), "--out", mine}, tmp_.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("not a report directory"));
  EXPECT_THAT(r.err, HasSubstr("notes.txt"));
  EXPECT_EQ(ReadWholeFile(mine + "/notes.txt"), "keep me");
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(mine),
                          std::filesystem::directory_iterator()),
            1);

  const std::string out = RenderTwoRuns("png");
  r = Report({Run("dim16"), "--out", out}, tmp_.path());
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_THAT(r.err, HasSubstr("--overwrite"));
  r = Report({Run("dim16"), "--out", out, "--overwrite"}, tmp_.path());
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ReadJson(out + "/report.json")["runs"].size(), 1u);
}

// Runs tools/bench/NAME.sh with `args` against this build, from the source
// root, with WORK under tmp; its stdout, with a failure unless it exits 0.
std::string RunBench(const std::string &name, const std::string &args,
                     const TempDir &tmp) {
  const std::string log = tmp.Sub(name + ".log");
  const std::string bench_dir =
      std::filesystem::path(kEmber).parent_path() / "tools/bench";
  const std::string cmd =
      "cd '" + std::string(EMBER_SOURCE_DIR) + "' && EMBER='" + kEmber +
      "' SCORE_BENCH='" + bench_dir + "/score_bench' WORK='" +
      tmp.Sub(name + ".work") + "' bash tools/bench/" + name + ".sh " + args +
      " >'" + log + "' 2>'" + log + ".err'";
  EXPECT_EQ(::ember::testing::RunShell(cmd), 0)
      << name << ".sh: " << ReadWholeFile(log + ".err");
  return ReadWholeFile(log);
}

TEST_F(ReportTest, BenchScriptsWriteJsonThatTheReportDraws) {
  // Tiny sizes: the figures mean nothing, the shapes do.
  const std::string import_json = tmp_.Sub("import.json");
  const std::string import_out =
      RunBench("import", "8 64M --json-out " + import_json, tmp_);
  const std::string batching_json = tmp_.Sub("batching.json");
  const std::string batching_out =
      RunBench("batching", "1000 1 2 --json-out=" + batching_json, tmp_);

  // The text is as before: the same lines, and the JSON holds their figures.
  EXPECT_THAT(import_out, HasSubstr("integer ids, split+dedupe "));
  EXPECT_THAT(import_out, HasSubstr(" M edges/s  peak RSS "));
  EXPECT_THAT(batching_out, HasSubstr("most a scheduler can gain over fixed"));
  const nlohmann::json imp = ReadJson(import_json);
  ASSERT_TRUE(imp.is_object());
  EXPECT_EQ(imp["bench"], "import");
  EXPECT_EQ(imp["config"]["edges"], 16 << 8);
  ASSERT_EQ(imp["runs"].size(), 3u);
  EXPECT_EQ(imp["runs"][0]["label"], "integer ids");
  EXPECT_GT(imp["runs"][0]["peak_rss_mib"].get<double>(), 1.0);
  EXPECT_GT(imp["runs"][2]["edges_per_second"].get<double>(), 0.0);
  const nlohmann::json bat = ReadJson(batching_json);
  ASSERT_TRUE(bat.is_object());
  ASSERT_EQ(bat["runs"].size(), 2u);
  EXPECT_EQ(bat["runs"][1]["label"], "variance-aware");
  for (const char *key :
       {"epoch_seconds", "batch_seconds_cv", "idle_share", "batch_nnz_cv",
        "edge_cost", "test_mrr", "peak_rss_mib"}) {
    EXPECT_TRUE(bat["runs"][0][key].is_number()) << key;
  }
  EXPECT_TRUE(bat["summary"]["speedup_bound"].is_number());

  const std::string out = tmp_.Sub("report");
  const ProcessResult r =
      Report({"--bench", import_json, "--bench", batching_json, "--out", out},
             tmp_.path());
  ExpectMatplotlib(r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json manifest = ReadJson(out + "/report.json");
  ASSERT_TRUE(manifest.is_object());
  // import: 4 figures in one row; batching: 7 in two rows of 4.
  const std::pair<std::string, std::pair<uint32_t, uint32_t>> want[] = {
      {"bench-import.png", {1200, 400}},
      {"bench-batching.png", {1200, 800}},
      {"peak_memory.png", {800, 480}}};
  for (const auto &[file, size] : want) {
    const auto png = PngSize(out + "/" + file);
    ASSERT_TRUE(png.has_value()) << file;
    EXPECT_EQ(*png, size) << file;
  }
  const nlohmann::json imp_plot = Plot(manifest, "bench-import.png");
  ASSERT_EQ(imp_plot["panels"].size(), 4u);
  EXPECT_THAT(Series(imp_plot, 2), ElementsAre("peak_rss_mib:bar:3"));
  EXPECT_EQ(Plot(manifest, "bench-batching.png")["panels"].size(), 7u);
  // Peak RSS of the 3 import runs and the 2 batching runs.
  EXPECT_THAT(Series(Plot(manifest, "peak_memory.png"), 0),
              ElementsAre("peak RSS:bar:5"));
  const std::string index = ReadWholeFile(out + "/index.md");
  EXPECT_THAT(index, HasSubstr("## tools/bench: import (import)"));
  EXPECT_THAT(index, HasSubstr("| integer ids, split+dedupe | "));
  EXPECT_THAT(index, HasSubstr("- speedup bound: "));
}

TEST_F(ReportTest, TrainBenchWritesJson) {
  const std::string bench =
      (std::filesystem::path(kEmber).parent_path() / "tools/bench/score_bench")
          .string();
  // train.sh builds what is missing; a test must not, so it needs score_bench
  // built.
  ASSERT_TRUE(std::filesystem::exists(bench))
      << bench << " is built with ember";
  const std::string json = tmp_.Sub("train.json");
  const std::string text = RunBench("train", "8 1 --json-out " + json, tmp_);
  EXPECT_THAT(text, HasSubstr("out-of-core / in-memory edges/s: "));
  const nlohmann::json j = ReadJson(json);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["bench"], "train");
  // A third run, --precision bf16, where the CPU has AVX512-BF16.
  ASSERT_EQ(j["runs"].size(), Bf16GemmAvailable() ? 3u : 2u);
  EXPECT_EQ(j["runs"][0]["label"], "in-memory");
  EXPECT_EQ(j["runs"][1]["label"], "out-of-core");
  if (Bf16GemmAvailable()) {
    EXPECT_EQ(j["runs"][2]["label"], "in-memory-bf16");
    EXPECT_TRUE(j["summary"]["bf16_over_fp32"].is_number());
    EXPECT_TRUE(j["summary"]["bf16_ceiling_share"].is_number());
  }
  for (const char *key :
       {"edges_per_second", "scoring_gflops", "sgemm_share", "peak_rss_mib"}) {
    EXPECT_TRUE(j["runs"][1][key].is_number()) << key;
  }
  EXPECT_TRUE(j["summary"]["out_of_core_over_in_memory"].is_number());
  EXPECT_TRUE(j["config"]["sgemm_gflops"].is_number());
}

TEST_F(ReportTest, KgDefaultBenchWritesJson) {
  // The CPU trainer's section (trainer_bench, a 400 MB graph) is left out.
  ::setenv("TRAINER_BENCH", "/nonexistent", 1);
  ::setenv("RUNS", "1", 1);
  const std::string json = tmp_.Sub("kg_default.json");
  const std::string text = RunBench("kg_default", "2000 2 --json-out " + json, tmp_);
  ::unsetenv("TRAINER_BENCH");
  ::unsetenv("RUNS");
  EXPECT_THAT(text, HasSubstr("wall / training "));
  const nlohmann::json j = ReadJson(json);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["bench"], "kg_default");
  ASSERT_EQ(j["runs"].size(), 2u);
  EXPECT_EQ(j["runs"][0]["label"], "kg-default");
  EXPECT_EQ(j["runs"][1]["label"], "single-relation");
  for (const char* key : {"edges_per_second", "sgemm_share", "train_seconds", "checkpoint_seconds",
                          "probe_seconds", "wall_over_training"}) {
    EXPECT_TRUE(j["runs"][0][key].is_number()) << key;
  }
  // The checkpoints' time is measured, not left out of the split.
  EXPECT_GT(j["runs"][0]["checkpoint_seconds"].get<double>(), 0.0);
  EXPECT_GT(j["runs"][0]["wall_over_training"].get<double>(), 1.0);
}

} // namespace
} // namespace ember
