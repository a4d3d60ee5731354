// `ember gen rmat|sbm|features|kg`: synthetic graph generators. Flags map
// onto gen::RmatOptions / SbmOptions / FeaturesOptions / KgOptions and
// gen::GenOutputOptions; the work is done by the library functions in
// rmat_generator.h, sbm_generator.h, features_generator.h and
// kg_generator.h.
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"
#include "storage/base/status_macros.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "tools/gen/features_generator.h"
#include "tools/gen/gen_output.h"
#include "tools/gen/kg_generator.h"
#include "tools/gen/rmat_generator.h"
#include "tools/gen/sbm_generator.h"

// A flag that sets an options field takes that field's default.
ABSL_FLAG(int, scale, ember::tools::gen::RmatOptions{}.scale,
          "gen rmat: log2 of the node count, in [1, 40].");
ABSL_FLAG(uint64_t, edge_factor, ember::tools::gen::RmatOptions{}.edge_factor,
          "gen rmat: edges per node (edges = edge_factor * 2^scale).");
ABSL_FLAG(uint32_t, relations, 0,
          "gen rmat: relation types; > 1 writes src<TAB>r<k><TAB>dst lines "
          "(0: 1). gen kg: relations in all, >= 7, split among the kinds in "
          "fixed proportions (0: 30).");
ABSL_FLAG(uint64_t, hubs, 0,
          "gen rmat: nodes made hubs: each gets edges to --hub-fraction of "
          "all nodes, on top of the R-MAT edges.");
ABSL_FLAG(double, hub_fraction, ember::tools::gen::RmatOptions{}.hub_fraction,
          "gen rmat: share of all nodes each --hubs hub links to, in (0, 1].");
ABSL_FLAG(uint64_t, nodes, 0,
          "gen sbm: number of nodes N (0: 1000). gen kg: number of entities "
          "(0: 20000).");
ABSL_FLAG(uint64_t, blocks, ember::tools::gen::SbmOptions{}.blocks,
          "gen sbm: number of blocks K; node i is in block i % K.");
ABSL_FLAG(double, avg_degree, ember::tools::gen::SbmOptions{}.avg_degree,
          "gen sbm: average degree D (round(N*D/2) undirected edges).");
ABSL_FLAG(double, mixing, ember::tools::gen::SbmOptions{}.mixing,
          "gen sbm: fraction of edges between different blocks, in [0, 1].");
ABSL_FLAG(std::string, labels_out, "",
          "gen sbm: path of the node<TAB>block labels file.");

ABSL_FLAG(std::string, labels, "",
          "gen features: the node<TAB>block labels file of `gen sbm`.");
ABSL_FLAG(uint64_t, vocab, ember::tools::gen::FeaturesOptions{}.vocab,
          "gen features: vocabulary size (feature names f0 .. f<V-1>).");
ABSL_FLAG(double, nnz_alpha, ember::tools::gen::FeaturesOptions{}.nnz_alpha,
          "gen features: tail exponent of the non-zeros per node (P(nnz >= k) = k^-alpha); "
          "smaller is heavier.");
ABSL_FLAG(uint32_t, max_nnz, ember::tools::gen::FeaturesOptions{}.max_nnz,
          "gen features: most non-zeros of one node.");

ABSL_FLAG(uint32_t, types, ember::tools::gen::KgOptions{}.types,
          "gen kg: entity types (entity i has type i % T).");
ABSL_FLAG(double, facts_per_node, ember::tools::gen::KgOptions{}.facts_per_node,
          "gen kg: facts per inverse pair, symmetric and plain relation, as a "
          "multiple of --nodes.");
ABSL_FLAG(double, popularity_exponent, ember::tools::gen::KgOptions{}.popularity_exponent,
          "gen kg: Zipf exponent of entity popularity (0 uniform; larger is "
          "more skewed).");
ABSL_FLAG(double, valid_fraction, ember::tools::gen::KgOptions{}.valid_fraction,
          "gen kg: share of edges held out in --valid-out.");
ABSL_FLAG(double, test_fraction, ember::tools::gen::KgOptions{}.test_fraction,
          "gen kg: share of edges held out in --test-out.");
ABSL_FLAG(std::string, valid_out, "",
          "gen kg: path of the held-out validation triples.");
ABSL_FLAG(std::string, test_out, "",
          "gen kg: path of the held-out test triples.");

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

// A flag whose 0 stands for "this generator's default".
template <typename T>
T OrDefault(T value, T fallback) {
  return value == 0 ? fallback : value;
}

absl::Status RunKg(const gen::GenOutputOptions& output) {
  gen::KgOptions o;
  o.nodes = OrDefault<uint64_t>(absl::GetFlag(FLAGS_nodes), o.nodes);
  o.types = absl::GetFlag(FLAGS_types);
  ASSIGN_OR_RETURN(o.mix, gen::KgRelationMix::ForTotal(OrDefault<uint32_t>(
                              absl::GetFlag(FLAGS_relations), o.mix.total())));
  o.facts_per_node = absl::GetFlag(FLAGS_facts_per_node);
  o.popularity_exponent = absl::GetFlag(FLAGS_popularity_exponent);
  o.valid_fraction = absl::GetFlag(FLAGS_valid_fraction);
  o.test_fraction = absl::GetFlag(FLAGS_test_fraction);
  o.seed = absl::GetFlag(FLAGS_seed);
  gen::KgOutputPaths paths;
  paths.valid = absl::GetFlag(FLAGS_valid_out);
  paths.test = absl::GetFlag(FLAGS_test_out);
  paths.relations = absl::GetFlag(FLAGS_relations_out);
  gen::KgStats stats;
  RETURN_IF_ERROR(gen::GenerateKg(o, output, paths, &stats));
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json j = {{"generator", "kg"},
                        {"out", output.path},
                        {"valid_out", paths.valid},
                        {"test_out", paths.test},
                        {"relations_out", paths.relations},
                        {"nodes", stats.nodes},
                        {"types", stats.types},
                        {"edges",
                         {{"train", stats.train_edges},
                          {"valid", stats.valid_edges},
                          {"test", stats.test_edges}}},
                        {"moved_to_train", stats.moved_to_train},
                        {"relations_by_kind", stats.relations_by_kind},
                        {"edges_by_kind", stats.edges_by_kind},
                        {"bytes", stats.bytes_written},
                        {"seconds", stats.seconds}};
    std::printf("%s\n", j.dump().c_str());
  }
  return absl::OkStatus();
}

absl::Status RunGen(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return absl::InvalidArgumentError(
        "usage: ember gen rmat|sbm|features|kg [flags] --out FILE "
        "(exactly one generator name expected)");
  }
  const gen::GenOutputOptions output = OutputFromFlags();
  gen::GenStats stats;
  if (args[0] == "rmat") {
    gen::RmatOptions o;
    o.scale = absl::GetFlag(FLAGS_scale);
    o.edge_factor = absl::GetFlag(FLAGS_edge_factor);
    o.relations = OrDefault<uint32_t>(absl::GetFlag(FLAGS_relations), 1);
    o.seed = absl::GetFlag(FLAGS_seed);
    o.hubs = absl::GetFlag(FLAGS_hubs);
    o.hub_fraction = absl::GetFlag(FLAGS_hub_fraction);
    if (absl::Status s = gen::GenerateRmat(o, output, &stats); !s.ok()) {
      return s;
    }
    if (absl::GetFlag(FLAGS_json)) PrintJson("rmat", output, stats, "");
    return absl::OkStatus();
  }
  if (args[0] == "sbm") {
    gen::SbmOptions o;
    o.nodes = OrDefault<uint64_t>(absl::GetFlag(FLAGS_nodes), o.nodes);
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
  if (args[0] == "kg") return RunKg(output);
  return absl::InvalidArgumentError(
      absl::StrCat("unknown generator '", args[0],
                   "'; expected 'rmat', 'sbm', 'features' or 'kg'"));
}

}  // namespace

int GenMain(const std::vector<std::string>& args) {
  return ReportStatus("gen", RunGen(args));
}

}  // namespace ember::tools
