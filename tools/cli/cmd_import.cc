// ember import --out GRAPH [options] FILE...
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "partition/importer.h"
#include "storage/base/status_macros.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "storage/base/progress.h"

ABSL_FLAG(ember::PartitionerKind, partitioner, ember::PartitionerKind::kHash,
          "import: node partitioner: hash (uniform) or degree (evens out "
          "edges per partition).");
ABSL_FLAG(std::string, split, "1",
          "import: TRAIN[,VALID[,TEST]] fractions, e.g. 0.9,0.05,0.05. "
          "Default: all edges train.");
ABSL_FLAG(std::vector<std::string>, valid, {},
          "import: file(s) whose edges form the validation split.");
ABSL_FLAG(std::vector<std::string>, test, {},
          "import: file(s) whose edges form the test split.");
ABSL_FLAG(std::string, delimiter, "auto",
          "import: auto, tab, space, comma or one character.");
ABSL_FLAG(std::string, columns, "",
          "import: 0-based SRC,DST or SRC,REL,DST columns. Default: 2 "
          "fields are src dst, 3 are src rel dst; lines of more fields need --columns.");
ABSL_FLAG(bool, header, false, "import: skip the first line of each file.");
ABSL_FLAG(bool, integer_ids, false,
          "import: ids are non-negative 64-bit integers (faster).");
ABSL_FLAG(bool, dedupe, false,
          "import: drop repeated (src, rel, dst) edges within a split.");
ABSL_FLAG(std::string, self_loops, "keep", "import: keep or drop self loops.");
ABSL_FLAG(bool, skip_bad_lines, false,
          "import: count bad lines by reason and go on, instead of stopping "
          "at the first one.");
ABSL_FLAG(bool, inductive, false,
          "import: keep valid/test edges whose nodes have no train edge (for "
          "evaluating --featurized models on unseen nodes); default moves them "
          "to train.");
ABSL_FLAG(std::string, append, "",
          "import: GRAPH to add the files' edges and new nodes to (instead "
          "of --out); existing nodes keep their ids.");
ABSL_FLAG(std::vector<std::string>, node_features, {},
          "import: file(s) of node<TAB>feat[:weight] feat[:weight] ... lines "
          "(sparse node features; comma list).");
ABSL_FLAG(std::string, schema, "",
          "import: node types: a file of relation<TAB>source type<TAB>destination type lines, "
          "or inline REL:SRC_TYPE:DST_TYPE,... (SRC_TYPE:DST_TYPE for files without a relation "
          "column). Each type gets its own partitions, and negatives, evaluation and "
          "recommendations of a relation come from its side's type. Empty: one kind of node.");
ABSL_FLAG(std::string, type_partitions, "",
          "import: partitions of named types, e.g. user=16,item=1 (or auto), overriding "
          "--partitions for them; a type of 1 partition stays resident in every bucket.");
ABSL_FLAG(std::string, memory_budget, "2G",
          "import: peak memory target, e.g. 1G, 512M; with --partitions auto "
          "also the train --memory-budget P is chosen for.");

namespace ember::tools {
namespace {

absl::StatusOr<ImportOptions> OptionsFromFlags(const std::vector<std::string>& files) {
  ImportOptions o;
  o.out = absl::GetFlag(FLAGS_out);
  if (!absl::GetFlag(FLAGS_append).empty()) {
    if (!o.out.empty()) {
      return absl::InvalidArgumentError("give either --out or --append GRAPH, not both");
    }
    o.out = absl::GetFlag(FLAGS_append);
    o.append = true;
  }
  o.files = files;
  o.valid_files = absl::GetFlag(FLAGS_valid);
  o.test_files = absl::GetFlag(FLAGS_test);
  o.node_feature_files = absl::GetFlag(FLAGS_node_features);
  o.num_partitions = absl::GetFlag(FLAGS_partitions).value;
  o.auto_dim = absl::GetFlag(FLAGS_dim);
  if (o.append && o.num_partitions != 1) {
    return absl::InvalidArgumentError(
        "--partitions does not apply to --append: the graph keeps its partition count");
  }
  o.partitioner = absl::GetFlag(FLAGS_partitioner);
  o.schema = absl::GetFlag(FLAGS_schema);
  for (absl::string_view entry :
       absl::StrSplit(absl::GetFlag(FLAGS_type_partitions), ',', absl::SkipWhitespace())) {
    const size_t eq = entry.rfind('=');
    PartitionCount count;
    std::string error;
    if (eq == absl::string_view::npos || !AbslParseFlag(entry.substr(eq + 1), &count, &error)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--type-partitions entry '", entry, "': expected TYPE=P (P in [1, 4096] or auto)",
          error.empty() ? "" : absl::StrCat(": ", error)));
    }
    o.type_partitions.emplace_back(std::string(entry.substr(0, eq)), count.value);
  }
  ASSIGN_OR_RETURN(o.split, ParseSplitFractions(absl::GetFlag(FLAGS_split)));
  ASSIGN_OR_RETURN(o.delimiter, ParseDelimiterFlag(absl::GetFlag(FLAGS_delimiter)));
  if (!absl::GetFlag(FLAGS_columns).empty()) {
    ASSIGN_OR_RETURN(o.columns, ParseColumnsFlag(absl::GetFlag(FLAGS_columns)));
  }
  o.header = absl::GetFlag(FLAGS_header);
  o.integer_ids = absl::GetFlag(FLAGS_integer_ids);
  o.dedupe = absl::GetFlag(FLAGS_dedupe);
  const std::string loops = absl::GetFlag(FLAGS_self_loops);
  if (loops != "keep" && loops != "drop") {
    return absl::InvalidArgumentError("--self-loops takes keep or drop");
  }
  o.drop_self_loops = loops == "drop";
  o.skip_bad_lines = absl::GetFlag(FLAGS_skip_bad_lines);
  o.inductive = absl::GetFlag(FLAGS_inductive);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.threads = ThreadCount();
  ASSIGN_OR_RETURN(o.memory_budget, MemoryBudget());
  o.overwrite = absl::GetFlag(FLAGS_overwrite);
  return o;
}

// {"user": {"nodes": N, "partitions": P}, ...}; {} for an untyped graph.
nlohmann::json TypesJson(const ImportSummary& s) {
  nlohmann::json types = nlohmann::json::object();
  for (const ImportSummary::TypeCount& t : s.types) {
    if (t.name.empty()) continue;
    types[t.name] = {{"nodes", t.nodes}, {"partitions", t.partitions}};
  }
  return types;
}

nlohmann::json SummaryJson(const ImportSummary& s) {
  nlohmann::json rejected = nlohmann::json::object();
  for (int i = 0; i < kNumRejectReasons; ++i) {
    rejected[std::string(RejectReasonName(static_cast<RejectReason>(i)))] = s.rejected[i];
  }
  nlohmann::json features = nlohmann::json::object();
  if (s.features.lines > 0 || s.features.vocab_size > 0) {
    nlohmann::json frej = nlohmann::json::object();
    for (int i = 0; i < kNumFeatureRejectReasons; ++i) {
      frej[std::string(FeatureRejectReasonName(static_cast<FeatureRejectReason>(i)))] =
          s.features.rejected[i];
    }
    features = {{"vocab", s.features.vocab_size},
                {"nodes", s.features.nodes_with_features},
                {"nonzeros", s.features.nonzeros},
                {"lines", s.features.lines},
                {"unknown_nodes", s.features.unknown_nodes},
                {"rejected", frej}};
  }
  return {
      {"features", features},
      {"nodes", s.nodes},
      {"edges", {{"train", s.edges.train}, {"valid", s.edges.valid}, {"test", s.edges.test}}},
      {"relations", s.relations},
      {"partitions", s.partitions},
      {"partitions_auto", s.partitions_auto.has_value()
                              ? nlohmann::json{{"dim", s.partitions_auto->dim},
                                               {"memory_budget", s.partitions_auto->memory_budget},
                                               {"node_count_seconds", s.node_count_seconds}}
                              : nlohmann::json(nullptr)},
      {"lines", s.lines},
      {"rejected", rejected},
      {"self_loops_dropped", s.self_loops_dropped},
      {"duplicates_dropped", s.duplicates_dropped},
      {"moved_to_train", s.moved_to_train},
      {"new_nodes", s.new_nodes},
      {"types", TypesJson(s)},
      {"warnings", s.warnings},
      {"input_bytes", s.input_bytes},
      {"seconds", s.seconds},
      {"edges_per_second", s.seconds > 0 ? s.lines / s.seconds : 0.0},
  };
}

void PrintSummary(const ImportSummary& s, const std::string& out, bool append) {
  uint64_t rejected = 0;
  for (uint64_t r : s.rejected) rejected += r;
  std::printf("%s %s: %llu nodes, %llu edges (train %llu, valid %llu, test %llu), "
              "%u relations, %u partitions%s\n",
              append ? "appended to" : "imported", out.c_str(), (unsigned long long)s.nodes,
              (unsigned long long)s.edges.total(), (unsigned long long)s.edges.train,
              (unsigned long long)s.edges.valid, (unsigned long long)s.edges.test,
              s.relations, s.partitions,
              s.partitions_auto.has_value()
                  ? absl::StrFormat(" (auto: --dim %u, --memory-budget %s)",
                                    s.partitions_auto->dim,
                                    ByteSizeText(s.partitions_auto->memory_budget))
                        .c_str()
                  : "");
  for (const ImportSummary::TypeCount& t : s.types) {
    if (t.name.empty()) continue;
    std::printf("  type %s: %llu nodes in %u partition%s\n", t.name.c_str(),
                (unsigned long long)t.nodes, t.partitions, t.partitions == 1 ? "" : "s");
  }
  std::printf("read %s in %.2f s (%s edges/s)\n", HumanBytes(s.input_bytes).c_str(),
              s.seconds, HumanCount(s.seconds > 0 ? s.lines / s.seconds : 0).c_str());
  if (rejected > 0) {
    std::printf("rejected %llu lines:", (unsigned long long)rejected);
    for (int i = 0; i < kNumRejectReasons; ++i) {
      if (s.rejected[i] > 0) {
        std::printf(" %s=%llu", std::string(RejectReasonName(static_cast<RejectReason>(i))).c_str(),
                    (unsigned long long)s.rejected[i]);
      }
    }
    std::printf("\n");
  }
  const FeatureImportSummary& f = s.features;
  if (f.lines > 0 || f.vocab_size > 0) {
    std::printf("features: %llu names, %llu nodes with features, %llu non-zeros",
                (unsigned long long)f.vocab_size, (unsigned long long)f.nodes_with_features,
                (unsigned long long)f.nonzeros);
    if (f.unknown_nodes) {
      std::printf(", %llu lines for nodes not in the graph skipped",
                  (unsigned long long)f.unknown_nodes);
    }
    std::printf("\n");
    uint64_t frej = 0;
    for (uint64_t r : f.rejected) frej += r;
    if (frej > 0) {
      std::printf("rejected %llu feature lines:", (unsigned long long)frej);
      for (int i = 0; i < kNumFeatureRejectReasons; ++i) {
        if (f.rejected[i] > 0) {
          std::printf(" %s=%llu",
                      std::string(FeatureRejectReasonName(static_cast<FeatureRejectReason>(i))).c_str(),
                      (unsigned long long)f.rejected[i]);
        }
      }
      std::printf("\n");
    }
  }
  if (s.self_loops_dropped) std::printf("dropped %llu self loops\n", (unsigned long long)s.self_loops_dropped);
  if (s.duplicates_dropped) std::printf("dropped %llu duplicate edges\n", (unsigned long long)s.duplicates_dropped);
  if (s.new_nodes) std::printf("%llu of the nodes are new\n", (unsigned long long)s.new_nodes);
  if (s.moved_to_train) {
    std::printf("moved %llu valid/test edges to train: an endpoint appears in no train edge "
                "(--inductive keeps them)\n",
                (unsigned long long)s.moved_to_train);
  }
}

}  // namespace

int ImportMain(const std::vector<std::string>& args) {
  auto options = OptionsFromFlags(args);
  if (!options.ok()) return ReportStatus("import", options.status());
  ProgressPrinter progress = ProgressFromFlags();
  options->progress = [&](const ImportProgress& p) {
    progress.Update(p.phase, p.done, p.total, p.unit,
                    absl::StrFormat("%s edges (%s edges/s overall)", HumanCount(p.edges_read),
                                    HumanCount(p.elapsed_seconds > 0
                                                   ? p.edges_read / p.elapsed_seconds
                                                   : 0)));
  };
  auto summary = ImportGraph(*options);
  progress.Finish();
  if (!summary.ok()) return ReportStatus("import", summary.status());
  for (const std::string& warning : summary->warnings) {
    std::fprintf(stderr, "ember import: warning: %s\n", warning.c_str());
  }
  if (absl::GetFlag(FLAGS_json)) {
    std::printf("%s\n", SummaryJson(*summary).dump().c_str());
  } else {
    PrintSummary(*summary, options->out, options->append);
  }
  return 0;
}

}  // namespace ember::tools
