// ember export GRAPH --format tsv|npy|w2v|fvecs|h5 --out PATH [--type T]
//                    [--relations-out FILE] [--memory-budget B]
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "storage/graph.h"
#include "storage/base/status_macros.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "tools/export/exporter.h"
#include "storage/base/progress.h"

ABSL_FLAG(ember::tools::ExportFormat, format, ember::tools::ExportFormat::kTsv,
          "export: tsv (PBG: name<TAB>v1..vd), npy (NumPy float32 (n, d) + "
          "PATH.names.tsv), w2v (word2vec text), fvecs (+ PATH.names.tsv) or h5 (PBG's "
          "checkpoint layout: PATH is a new or empty directory of "
          "embeddings_<type>_<part>.v<N>.h5 (float32 dataset embeddings, attribute "
          "format_version 1), entity_names_<type>_<part>.json and "
          "entity_count_<type>_<part>.txt per type and partition, PBG's model.v<N>.h5 "
          "(relation parameters), config.json, dynamic_rel_names.json and "
          "dynamic_rel_count.txt, checkpoint_version.txt and meta.json; an untyped graph is "
          "the type all; needs a build with libhdf5-dev). "
          "Rows in global-id order; PATH.meta.json describes the model. "
          "Memory: one partition of embeddings at a time.");

namespace ember::tools {
namespace {

absl::StatusOr<ExportOptions> OptionsFromFlags() {
  ExportOptions o;
  o.out = absl::GetFlag(FLAGS_out);
  o.format = absl::GetFlag(FLAGS_format);
  o.relations_out = absl::GetFlag(FLAGS_relations_out);
  o.overwrite = absl::GetFlag(FLAGS_overwrite);
  o.type = absl::GetFlag(FLAGS_type);
  o.threads = ThreadCount();
  ASSIGN_OR_RETURN(o.memory_budget, MemoryBudget());
  RETURN_IF_ERROR(o.Validate());
  return o;
}

}  // namespace

int ExportMain(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return ReportStatus("export", absl::InvalidArgumentError(
                                      "usage: ember export GRAPH --format tsv|npy|w2v|fvecs|h5 "
                                      "--out PATH [--type T] [--relations-out FILE] "
                                      "[--overwrite] [--memory-budget B]"));
  }
  auto options = OptionsFromFlags();
  if (!options.ok()) return ReportStatus("export", options.status());
  auto graph = Graph::Open(args[0]);
  if (!graph.ok()) return ReportStatus("export", graph.status());
  ProgressPrinter progress = ProgressFromFlags();
  options->progress = [&](const ExportProgress& p) {
    progress.Update(absl::StrFormat("export partition %d/%d", p.partition + 1, p.partitions),
                    p.rows_done, p.rows_total, "rows",
                    absl::StrFormat("%s written", HumanBytes(p.bytes_written)));
  };
  auto stats = ExportEmbeddings(**graph, *options);
  progress.Finish();
  if (!stats.ok()) return ReportStatus("export", stats.status());
  const double mbps = stats->seconds > 0 ? stats->bytes / stats->seconds / 1e6 : 0;
  if (absl::GetFlag(FLAGS_json)) {
    nlohmann::json j = {{"files", stats->files},
                        {"format", std::string(ExportFormatName(options->format))},
                        {"rows", stats->rows},
                        {"dimension", stats->dim},
                        {"partitions", stats->partitions},
                        {"checkpoint_version", stats->checkpoint_version},
                        {"bytes", stats->bytes},
                        {"total_bytes", stats->total_bytes},
                        {"peak_rows_held", stats->peak_rows_held},
                        {"seconds", stats->seconds},
                        {"mb_per_second", mbps}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("exported %llu x %d embeddings (checkpoint %llu) to %s: %s in %.2f s (%.1f MB/s)\n",
                (unsigned long long)stats->rows, stats->dim,
                (unsigned long long)stats->checkpoint_version, options->out.c_str(),
                HumanBytes(stats->bytes).c_str(), stats->seconds, mbps);
    if (options->format == ExportFormat::kH5) {
      std::printf("  wrote %zu files in %s (PBG's checkpoint layout, version %llu)\n",
                  stats->files.size() - 1, options->out.c_str(),
                  (unsigned long long)stats->checkpoint_version);
    } else {
      for (size_t i = 1; i < stats->files.size(); ++i) {
        std::printf("  wrote %s\n", stats->files[i].c_str());
      }
    }
  }
  return 0;
}

}  // namespace ember::tools
