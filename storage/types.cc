#include "storage/types.h"

namespace ember {

std::string_view SplitName(Split split) {
  switch (split) {
    case Split::kTrain:
      return "train";
    case Split::kValid:
      return "valid";
    case Split::kTest:
      return "test";
  }
  return "unknown";
}

}  // namespace ember
