#include "tools/cli.h"

#include "absl/status/status.h"

namespace ember::tools {

int ExportMain(const std::vector<std::string>& args) {
  return ReportStatus("export", absl::UnimplementedError("not built yet"));
}

}  // namespace ember::tools
