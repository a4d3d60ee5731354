#include "tools/cli.h"

#include "absl/status/status.h"

namespace ember::tools {

int GenMain(const std::vector<std::string>& args) {
  return ReportStatus("gen", absl::UnimplementedError("not built yet"));
}

}  // namespace ember::tools
