#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "train/model/gather_copies.h"

namespace ember::tools {

// ember gather GRAPH COPY...: brings into GRAPH the rows that ranks
// training their own copies (train --rank-copies) checkpointed into the
// other copies.
int GatherMain(const std::vector<std::string>& args) {
  if (args.empty()) {
    return ReportStatus("gather", absl::InvalidArgumentError(
                                      "usage: ember gather GRAPH COPY... (GRAPH: the copy to "
                                      "complete; COPY: the other ranks' copies)"));
  }
  const std::vector<std::string> copies(args.begin() + 1, args.end());
  absl::StatusOr<GatherReport> report = GatherCopies(args[0], copies);
  if (!report.ok()) return ReportStatus("gather", report.status());
  if (absl::GetFlag(FLAGS_quiet)) return 0;
  if (report->partitions == 0) {
    std::fprintf(stderr, "%s holds every partition's rows already; nothing to gather\n",
                 args[0].c_str());
  } else {
    std::fprintf(stderr, "gathered %u partitions (%.1f MB) into %s\n", report->partitions,
                 report->bytes / 1e6, args[0].c_str());
  }
  return 0;
}

}  // namespace ember::tools
