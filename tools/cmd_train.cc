#include "tools/cli.h"

#include "absl/status/status.h"

namespace ember::tools {

int TrainMain(const std::vector<std::string>& args) {
  return ReportStatus("train", absl::UnimplementedError("not built yet"));
}

}  // namespace ember::tools
