#include "tools/cli.h"

#include "absl/status/status.h"

namespace ember::tools {

int ImportMain(const std::vector<std::string>& args) {
  return ReportStatus("import", absl::UnimplementedError("not built yet"));
}

}  // namespace ember::tools
