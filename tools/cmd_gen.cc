// `ember gen rmat|sbm|features`: synthetic graph generators. Flags map onto
// gen::RmatOptions / gen::SbmOptions / gen::GenOutputOptions; the work is
// done by the library functions in rmat_generator.h and sbm_generator.h.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "tools/cli.h"
#include "tools/common_flags.h"
#include "tools/features_generator.h"
#include "tools/gen_output.h"
#include "tools/rmat_generator.h"
#include "tools/sbm_generator.h"

ABSL_FLAG(int, scale, 16, "gen rmat: log2 of the node count, in [1, 40].");
ABSL_FLAG(uint64_t, edge_factor, 16,
          "gen rmat: edges per node (edges = edge_factor * 2^scale).");
ABSL_FLAG(uint32_t, relations, 1,
          "gen rmat: relation types; > 1 writes src<TAB>r<k><TAB>dst lines.");
ABSL_FLAG(uint64_t, nodes, 1000, "gen sbm: number of nodes N.");
ABSL_FLAG(uint64_t, blocks, 10,
          "gen sbm: number of blocks K; node i is in block i % K.");
ABSL_FLAG(double, avg_degree, 10,
          "gen sbm: average degree D (round(N*D/2) undirected edges).");
ABSL_FLAG(double, mixing, 0.1,
          "gen sbm: fraction of edges between different blocks, in [0, 1].");
ABSL_FLAG(std::string, labels_out, "",
          "gen sbm: path of the node<TAB>block labels file.");

ABSL_FLAG(std::string, labels, "",
          "gen features: the node<TAB>block labels file of `gen sbm`.");
ABSL_FLAG(uint64_t, vocab, 100000,
          "gen features: vocabulary size (feature names f0 .. f<V-1>).");
ABSL_FLAG(double, nnz_alpha, 1.2,
          "gen features: tail exponent of the non-zeros per node (P(nnz >= k) = k^-alpha); "
          "smaller is heavier.");
ABSL_FLAG(uint32_t, max_nnz, 4096, "gen features: most non-zeros of one node.");

namespace ember::tools {
namespace {

gen::GenOutputOptions OutputFromFlags() {
  gen::GenOutputOptions o;
  o.path = absl::GetFlag(FLAGS_out);
  o.overwrite = absl::GetFlag(FLAGS_overwrite);
  o.threads = absl::GetFlag(FLAGS_threads);
  o.progress = !absl::GetFlag(FLAGS_quiet);
  return o;
}

void PrintJson(const std::string& kind, const gen::GenOutputOptions& out,
               const gen::GenStats& stats, const std::string& labels) {
  nlohmann::json j = {{"generator", kind},
                      {"out", out.path},
                      {"nodes", stats.nodes},
                      {"edges", stats.edges},
                      {"bytes", stats.bytes_written},
                      {"seconds", stats.seconds}};
  if (!labels.empty()) j["labels_out"] = labels;
  std::printf("%s\n", j.dump().c_str());
}

absl::Status RunGen(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ember gen rmat|sbm|features [flags] --out FILE "
        "(exactly one generator name expected)");
  }
  const gen::GenOutputOptions output = OutputFromFlags();
  gen::GenStats stats;
  if (args[0] == "rmat") {
    gen::RmatOptions o;
    o.scale = absl::GetFlag(FLAGS_scale);
    o.edge_factor = absl::GetFlag(FLAGS_edge_factor);
    o.relations = absl::GetFlag(FLAGS_relations);
    o.seed = absl::GetFlag(FLAGS_seed);
    if (absl::Status s = gen::GenerateRmat(o, output, &stats); !s.ok()) {
      return s;
    }
    if (absl::GetFlag(FLAGS_json)) PrintJson("rmat", output, stats, "");
    return absl::OkStatus();
  }
  if (args[0] == "sbm") {
    gen::SbmOptions o;
    o.nodes = absl::GetFlag(FLAGS_nodes);
    o.blocks = absl::GetFlag(FLAGS_blocks);
    o.avg_degree = absl::GetFlag(FLAGS_avg_degree);
    o.mixing = absl::GetFlag(FLAGS_mixing);
    o.seed = absl::GetFlag(FLAGS_seed);
    const std::string labels = absl::GetFlag(FLAGS_labels_out);
    if (absl::Status s = gen::GenerateSbm(o, output, labels, &stats); !s.ok()) {
      return s;
    }
    if (absl::GetFlag(FLAGS_json)) PrintJson("sbm", output, stats, labels);
    return absl::OkStatus();
  }
  if (args[0] == "features") {
    gen::FeaturesOptions o;
    o.vocab = absl::GetFlag(FLAGS_vocab);
    o.nnz_alpha = absl::GetFlag(FLAGS_nnz_alpha);
    o.max_nnz = absl::GetFlag(FLAGS_max_nnz);
    o.seed = absl::GetFlag(FLAGS_seed);
    const std::string labels = absl::GetFlag(FLAGS_labels);
    if (absl::Status s = gen::GenerateFeatures(o, labels, output, &stats);
        !s.ok()) {
      return s;
    }
    if (absl::GetFlag(FLAGS_json)) {
      nlohmann::json j = {{"generator", "features"},
                          {"out", output.path},
                          {"labels", labels},
                          {"vocab", o.vocab},
                          {"nodes", stats.nodes},
                          {"nonzeros", stats.edges},
                          {"bytes", stats.bytes_written},
                          {"seconds", stats.seconds}};
      std::printf("%s\n", j.dump().c_str());
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown generator '", args[0],
      "'; expected 'rmat', 'sbm' or 'features'"));
}

}  // namespace

int GenMain(const std::vector<std::string>& args) {
  return ReportStatus("gen", RunGen(args));
}

}  // namespace ember::tools
