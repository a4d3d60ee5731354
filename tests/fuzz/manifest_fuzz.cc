// libFuzzer target: the MANIFEST.json reader (storage/manifest.h). Any
// bytes must read or fail with a status (no exception, no crash); a
// manifest that reads is consistent. ReadManifest takes a path, so each
// input is written to one scratch file first.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "storage/manifest.h"

namespace {

const std::string& ScratchPath() {
  static const std::string path = [] {
    const char* dir = std::getenv("TMPDIR");
    return std::string(dir != nullptr ? dir : "/tmp") + "/ember_manifest_fuzz_" +
           std::to_string(::getpid()) + ".json";
  }();
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = ScratchPath();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size > 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  absl::StatusOr<ember::Manifest> m = ember::ReadManifest(path);
  if (m.ok() && !m->Validate().ok()) std::abort();
  std::remove(path.c_str());
  return 0;
}
