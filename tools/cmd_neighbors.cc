#include "tools/cli.h"

#include "absl/status/status.h"

namespace ember::tools {

int NeighborsMain(const std::vector<std::string>& args) {
  return ReportStatus("neighbors", absl::UnimplementedError("not built yet"));
}

}  // namespace ember::tools
