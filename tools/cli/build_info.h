// What this binary was built from and with, for `ember --version`. Defined
// in a source file the build generates (cmake/build_info.cmake), rewritten
// only when its contents change, so the commit stays current without
// rebuilding anything else.
#ifndef EMBER_TOOLS_CLI_BUILD_INFO_H_
#define EMBER_TOOLS_CLI_BUILD_INFO_H_

namespace ember::tools {

// The project's version (CMake's project(VERSION)), e.g. "0.1.0".
const char* BuildVersion();
// The source commit, short hash, with "-dirty" when the tree had changes
// ("unknown" outside a git checkout).
const char* BuildCommit();
// "built (nvcc 13.0)" or "not built (no nvcc found)".
const char* BuildCuda();
// "built (Open MPI 4.1.4)" or "not built (...)".
const char* BuildMpi();

}  // namespace ember::tools

#endif  // EMBER_TOOLS_CLI_BUILD_INFO_H_
