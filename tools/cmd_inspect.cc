#include "tools/cli.h"

#include "absl/status/status.h"

namespace ember::tools {

int InspectMain(const std::vector<std::string>& args) {
  return ReportStatus("inspect", absl::UnimplementedError("not built yet"));
}

}  // namespace ember::tools
