#include "train/distributed/launcher.h"

#include <charconv>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <optional>

namespace ember {
namespace {

// The value of the first of `names` that holds a plain decimal uint32 of at
// least `min`; nullopt when none does.
std::optional<uint32_t> FirstNumber(std::initializer_list<const char*> names, uint32_t min) {
  for (const char* name : names) {
    const char* text = std::getenv(name);
    if (text == nullptr || *text == '\0') continue;
    const char* end = text + std::strlen(text);
    uint32_t value = 0;
    const auto [stop, error] = std::from_chars(text, end, value);
    if (error == std::errc() && stop == end && value >= min) return value;
  }
  return std::nullopt;
}

}  // namespace

uint32_t LauncherWorldSize() {
  return FirstNumber({"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}, 1).value_or(1);
}

uint32_t LauncherRank() {
  return FirstNumber({"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}, 0).value_or(0);
}

}  // namespace ember
