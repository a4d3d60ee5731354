// ember tune GRAPH --grid FLAG=V1,V2,... [--grid ...] [--epochs 2]
//                  [--sample-edges N] [--eval-max-edges N] [--out FLAGFILE]
//                  [--json]
// Every combination of the grid's values is one probe (train/tune/probe.h): a
// short run that leaves the graph untouched, scored by filtered validation
// MRR against all nodes. Writes the best combination, with the train flags
// given on the command line, as a flagfile for `ember train --flagfile`.
#include <algorithm>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "nlohmann/json.hpp"
#include "storage/base/file_util.h"
#include "storage/graph.h"
#include "storage/base/status_macros.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/eval_flags.h"
#include "tools/cli/train_flags.h"
#include "train/tune/probe.h"

ABSL_DECLARE_FLAG(int, epochs);

ABSL_FLAG(std::string, grid, "",
          "tune: FLAG=V1,V2,... (repeat --grid for more flags): train flags and the values to "
          "try; every combination is one run.");
ABSL_FLAG(uint64_t, sample_edges, 1000000,
          "tune: train edges per run (a seeded sample of the train split); 0 = all.");

namespace ember::tools {
namespace {

// The train flags a flagfile carries besides the grid's: those that shape
// the model and its optimisation, when the command line set them.
constexpr const char* kModelFlags[] = {"operator",
                                       "comparator",
                                       "loss",
                                       "margin",
                                       "dim",
                                       "featurized",
                                       "relation_batching",
                                       "endpoint_negatives",
                                       "batch_size",
                                       "chunk_size",
                                       "num_uniform_negs",
                                       "init_scale",
                                       "lr",
                                       "relation_lr_scale",
                                       "batching",
                                       "reciprocal",
                                       "regularizer",
                                       "reg_weight"};

struct GridAxis {
  std::string flag;  // absl name ('_')
  std::vector<std::string> values;
};

absl::StatusOr<std::vector<GridAxis>> ParseGrid(const std::string& spec) {
  std::vector<GridAxis> grid;
  for (absl::string_view item : absl::StrSplit(spec, ';', absl::SkipEmpty())) {
    const std::vector<std::string> kv = absl::StrSplit(item, absl::MaxSplits('=', 1));
    GridAxis axis;
    axis.flag = kv[0];
    for (char& c : axis.flag) c = c == '-' ? '_' : c;
    if (kv.size() != 2 || axis.flag.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--grid takes FLAG=V1,V2,..., got \"", std::string(item), "\""));
    }
    absl::CommandLineFlag* flag = absl::FindCommandLineFlag(axis.flag);
    if (flag == nullptr || (!absl::StartsWith(flag->Help(), "train: ") && axis.flag != "dim")) {
      return absl::InvalidArgumentError(
          absl::StrCat("--grid ", axis.flag, ": not a flag of ember train"));
    }
    axis.values = absl::StrSplit(kv[1], ',', absl::SkipEmpty());
    if (axis.values.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--grid ", axis.flag, ": no values"));
    }
    for (const std::string& v : axis.values) {
      std::string error;
      if (axis.flag == "lr" && v == "auto") {
        return absl::InvalidArgumentError("--grid lr: auto is itself a search; give numbers");
      }
      if (!flag->ParseFrom(v, &error)) {
        return absl::InvalidArgumentError(absl::StrCat("--grid ", axis.flag, "=", v, ": ", error));
      }
    }
    grid.push_back(std::move(axis));
  }
  if (grid.empty()) {
    return absl::InvalidArgumentError("usage: ember tune GRAPH --grid FLAG=V1,V2,... [--grid ...]");
  }
  return grid;
}

// Sets the flags of combination `index` (mixed radix over the axes) and
// returns its values, one per axis.
std::vector<std::string> ApplyCombination(const std::vector<GridAxis>& grid, size_t index) {
  std::vector<std::string> values;
  for (const GridAxis& axis : grid) {
    const std::string& v = axis.values[index % axis.values.size()];
    index /= axis.values.size();
    std::string error;
    absl::FindCommandLineFlag(axis.flag)->ParseFrom(v, &error);  // checked by ParseGrid
    values.push_back(v);
  }
  return values;
}

// `--flag=value` lines of the grid's flags and of the model flags that
// differ from their defaults, as the flags stand now.
std::string FlagfileText(const std::vector<GridAxis>& grid) {
  std::vector<std::string> names;
  for (const GridAxis& axis : grid) names.push_back(axis.flag);
  for (const char* name : kModelFlags) {
    const absl::CommandLineFlag* f = absl::FindCommandLineFlag(name);
    if (f != nullptr && f->CurrentValue() != f->DefaultValue() &&
        std::find(names.begin(), names.end(), name) == names.end()) {
      names.push_back(name);
    }
  }
  std::string text = "# written by ember tune\n";
  for (const std::string& name : names) {
    absl::StrAppend(&text, "--", name, "=", absl::FindCommandLineFlag(name)->CurrentValue(), "\n");
  }
  return text;
}

struct TuneRun {
  std::vector<std::string> values;
  ProbeResult result;
};

absl::Status Tune(const std::string& graph_dir) {
  ASSIGN_OR_RETURN(std::vector<GridAxis> grid, ParseGrid(absl::GetFlag(FLAGS_grid)));
  const absl::CommandLineFlag* epochs_flag = absl::FindCommandLineFlag("epochs");
  ProbeOptions probe;
  probe.epochs = epochs_flag->CurrentValue() == epochs_flag->DefaultValue()
                     ? 2
                     : absl::GetFlag(FLAGS_epochs);
  probe.eval_edges = absl::GetFlag(FLAGS_eval_max_edges);
  GraphOpenOptions open;
  open.read_only = false;
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Graph::Open(graph_dir, open));
  const uint64_t train_edges = graph->manifest().edges.train;
  const uint64_t sample = absl::GetFlag(FLAGS_sample_edges);
  probe.edge_sample = sample == 0 || sample >= train_edges ? 1.0 : double(sample) / train_edges;
  RETURN_IF_ERROR(probe.Validate());

  size_t combinations = 1;
  for (const GridAxis& axis : grid) combinations *= axis.values.size();
  const bool quiet = absl::GetFlag(FLAGS_quiet) || absl::GetFlag(FLAGS_json);
  if (!quiet) {
    std::fprintf(stderr, "tune: %zu runs of %d epochs on %.1f%% of %llu train edges\n",
                 combinations, probe.epochs, 100 * probe.edge_sample,
                 (unsigned long long)train_edges);
  }
  std::vector<TuneRun> runs;
  size_t best = 0;
  for (size_t c = 0; c < combinations; ++c) {
    TuneRun run;
    run.values = ApplyCombination(grid, c);
    ASSIGN_OR_RETURN(TrainOptions options, TrainOptionsFromFlags());
    RETURN_IF_ERROR(CheckRegWeightFlag(options));
    ASSIGN_OR_RETURN(run.result, RunProbe(*graph, options, probe));
    if (!quiet) {
      std::string settings;
      for (size_t a = 0; a < grid.size(); ++a) {
        absl::StrAppend(&settings, a ? " " : "", "--", grid[a].flag, "=", run.values[a]);
      }
      const RankMetrics& m = run.result.valid.filtered;
      std::fprintf(stderr, "  run %zu/%zu %s: valid MRR %.4f ± %.4f (%.1f s)\n", c + 1,
                   combinations, settings.c_str(), m.mrr, m.mrr_ci95, run.result.train_seconds);
    }
    if (runs.empty() || run.result.valid.filtered.mrr > runs[best].result.valid.filtered.mrr) {
      best = runs.size();
    }
    runs.push_back(std::move(run));
  }
  ApplyCombination(grid, best);
  std::string out = absl::GetFlag(FLAGS_out);
  if (out.empty()) out = graph_dir + "/tune.flags";
  RETURN_IF_ERROR(internal::WriteFileAtomic(out, FlagfileText(grid)));

  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::ordered_json j;
    j["protocol"] = DescribeProtocol(runs[0].result.valid);
    j["epochs"] = probe.epochs;
    j["edge_sample"] = probe.edge_sample;
    for (const TuneRun& r : runs) {
      nlohmann::ordered_json settings;
      for (size_t a = 0; a < grid.size(); ++a) settings[grid[a].flag] = r.values[a];
      j["runs"].push_back({{"settings", settings},
                           {"valid_mrr", r.result.valid.filtered.mrr},
                           {"valid_mrr_ci95", r.result.valid.filtered.mrr_ci95},
                           {"valid_hits@10", r.result.valid.filtered.hits10},
                           {"train_seconds", r.result.train_seconds},
                           {"train_edges", r.result.train_edges}});
    }
    j["best"] = best;
    j["flagfile"] = out;
    std::printf("%s\n", j.dump().c_str());
    return absl::OkStatus();
  }
  std::printf("validation: %s\n", DescribeProtocol(runs[0].result.valid).c_str());
  std::string header;
  for (const GridAxis& axis : grid) absl::StrAppendFormat(&header, "%-18s ", axis.flag);
  std::printf("  %s%-18s %8s %9s\n", header.c_str(), "valid MRR", "Hits@10", "train s");
  for (size_t r = 0; r < runs.size(); ++r) {
    std::string row;
    for (const std::string& v : runs[r].values) absl::StrAppendFormat(&row, "%-18s ", v);
    const RankMetrics& m = runs[r].result.valid.filtered;
    std::printf("%s %s%-18s %8.4f %9.1f\n", r == best ? "*" : " ", row.c_str(),
                absl::StrFormat("%.4f ± %.4f", m.mrr, m.mrr_ci95).c_str(), m.hits10,
                runs[r].result.train_seconds);
  }
  std::printf("best settings written to %s; train with:\n  ember train %s --flagfile=%s\n",
              out.c_str(), graph_dir.c_str(), out.c_str());
  return absl::OkStatus();
}

}  // namespace

int TuneMain(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return ReportStatus("tune", absl::InvalidArgumentError(
                                    "usage: ember tune GRAPH --grid FLAG=V1,V2,... [flags]"));
  }
  PrintGemmStart();
  return ReportStatus("tune", Tune(args[0]));
}

}  // namespace ember::tools
