#include "tools/cli.h"

#include "absl/status/status.h"

namespace ember::tools {

int EvalMain(const std::vector<std::string>& args) {
  return ReportStatus("eval", absl::UnimplementedError("not built yet"));
}

}  // namespace ember::tools
