#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/status/status.h"
#include "storage/graph.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "tools/export/inspect.h"

namespace ember::tools {

// ember inspect GRAPH [--json]: describes a graph directory on stdout.
int InspectMain(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return ReportStatus("inspect", absl::InvalidArgumentError(
                                       "usage: ember inspect GRAPH [--json]"));
  }
  auto graph = Graph::Open(args[0]);  // read-only: takes no lock
  if (!graph.ok()) return ReportStatus("inspect", graph.status());
  std::string text;
  if (absl::GetFlag(FLAGS_json)) {
    absl::StatusOr<std::string> json = InspectJson(**graph);
    if (!json.ok()) return ReportStatus("inspect", json.status());
    text = std::move(*json);
  } else {
    text = InspectText(**graph);
  }
  std::fputs(text.c_str(), stdout);
  return 0;
}

}  // namespace ember::tools
