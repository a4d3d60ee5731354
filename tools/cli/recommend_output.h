// Where `ember recommend` writes its top Ks, in one of three formats:
//   tsv    user<TAB>item<TAB>score<TAB>rank lines, best first;
//   jsonl  one {"user": NAME, "items": [NAME, ...], "scores": [x, ...]}
//          object a line, best first;
//   npy    what NumPy code loads with np.load, four files beside PATH:
//          PATH.ids.npy     int64   [users, K]: item indexes (rows of
//                           PATH.items.tsv), best first, -1 past a user's
//                           last item;
//          PATH.scores.npy  float32 [users, K]: their scores, NaN past it;
//          PATH.users.tsv   row i's user name on line i;
//          PATH.items.tsv   item index j's name on line j (every node of
//                           the destination type, in global-id order).
// Rows come in the order they are added. tsv and jsonl go to standard
// output for the path "-"; files are written atomically (whole or not at
// all, storage/base/atomic_file.h).
#ifndef EMBER_TOOLS_CLI_RECOMMEND_OUTPUT_H_
#define EMBER_TOOLS_CLI_RECOMMEND_OUTPUT_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/base/enum_names.h"
#include "train/eval/recommender.h"

namespace ember::tools {

enum class RecommendFormat : uint8_t { kTsv = 0, kJsonl = 1, kNpy = 2 };

}  // namespace ember::tools

template <>
struct ember::EnumNames<ember::tools::RecommendFormat> {
  static constexpr std::string_view kWhat = "recommend format";
  static constexpr EnumNameTable<tools::RecommendFormat, 3> kTable = {{
      {tools::RecommendFormat::kTsv, "tsv"},
      {tools::RecommendFormat::kJsonl, "jsonl"},
      {tools::RecommendFormat::kNpy, "npy"},
  }};
};

namespace ember::tools {
using ::ember::AbslParseFlag;
using ::ember::AbslUnparseFlag;

struct RecommendOutputOptions {
  // The file (tsv, jsonl), "-" for standard output, or npy's path prefix.
  // Default: "".
  std::string path;
  // Default: tsv.
  RecommendFormat format = RecommendFormat::kTsv;
  // Replace existing files. Default: false.
  bool overwrite = false;
  // npy: the users that will be added (the arrays' first dimension).
  // Default: 0.
  uint64_t rows = 0;
  // npy: K, the arrays' second dimension, at least any top's size.
  // Default: 0.
  uint32_t width = 0;
  // The global id of item index 0 (the destination type's first node).
  // Default: 0.
  uint64_t first_item = 0;
  // Item names by index; must outlive the output. Default: none.
  const std::vector<std::string>* item_names = nullptr;

  // InvalidArgument for an empty path, npy to "-", or no item names.
  absl::Status Validate() const;
};

// Not copyable, not thread-safe.
class RecommendOutput {
 public:
  // Without `overwrite`, AlreadyExists naming a file that exists.
  static absl::StatusOr<std::unique_ptr<RecommendOutput>> Create(
      const RecommendOutputOptions& options);
  virtual ~RecommendOutput() = default;
  RecommendOutput(const RecommendOutput&) = delete;
  RecommendOutput& operator=(const RecommendOutput&) = delete;

  // One user's top, best first. REQUIRES: every id is an item's.
  virtual absl::Status Add(const std::string& user, std::span<const Scored> top) = 0;
  // Makes everything written visible (files) or flushed (standard output).
  // npy: FailedPrecondition unless `rows` users were added.
  virtual absl::Status Commit() = 0;

 protected:
  RecommendOutput() = default;
};

}  // namespace ember::tools

#endif  // EMBER_TOOLS_CLI_RECOMMEND_OUTPUT_H_
