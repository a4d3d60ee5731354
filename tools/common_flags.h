// Flags shared by several subcommands. Subcommand-specific flags are defined
// in that subcommand's file.
#ifndef EMBER_TOOLS_COMMON_FLAGS_H_
#define EMBER_TOOLS_COMMON_FLAGS_H_

#include <cstdint>
#include <string>

#include "absl/flags/declare.h"

ABSL_DECLARE_FLAG(std::string, out);
ABSL_DECLARE_FLAG(uint64_t, seed);
ABSL_DECLARE_FLAG(int, threads);
ABSL_DECLARE_FLAG(bool, overwrite);
ABSL_DECLARE_FLAG(bool, json);
ABSL_DECLARE_FLAG(int, partitions);
ABSL_DECLARE_FLAG(bool, quiet);

namespace ember::tools {
// --threads, with 0 meaning "all hardware threads".
int ThreadCount();
}  // namespace ember::tools

#endif  // EMBER_TOOLS_COMMON_FLAGS_H_
