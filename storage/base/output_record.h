// Output records: how ember recognises a file it wrote for a user (an
// export, a recommendation list, a saved index, a generated graph), so that
// `--overwrite` replaces such a file and nothing else.
//
// Beside every such file F ember keeps a record ".<name of F>.ember-made" in
// the same directory: three lines of text,
//   ember-output 1
//   size <bytes of F>
//   xxh3 <XXH3-64 of F's bytes, 16 lowercase hex digits>
// F counts as ember's when its record exists and F still has that size and
// hash. A file without a record (the user's own, or one an older ember
// wrote) or one changed since is not replaced.
#ifndef EMBER_STORAGE_BASE_OUTPUT_RECORD_H_
#define EMBER_STORAGE_BASE_OUTPUT_RECORD_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"

namespace ember {

// The size and hash of a file's bytes.
struct OutputFingerprint {
  uint64_t size = 0;
  uint64_t hash = 0;  // XXH3-64, seed 0
  bool operator==(const OutputFingerprint&) const = default;
};

// Fingerprints bytes handed over in pieces of any size. Not copyable.
class OutputHasher {
 public:
  OutputHasher();
  ~OutputHasher();
  OutputHasher(const OutputHasher&) = delete;
  OutputHasher& operator=(const OutputHasher&) = delete;

  void Update(std::string_view data);
  OutputFingerprint Finish() const;

 private:
  struct Rep;
  std::unique_ptr<Rep> rep_;
  uint64_t size_ = 0;
};

// The record's path for `path`: "<dir>/.<name>.ember-made".
std::string OutputRecordPath(const std::string& path);

// The record's text for `fingerprint` (the format above).
std::string OutputRecordText(const OutputFingerprint& fingerprint);

// OK when `path` (an existing file) is one ember made: its record exists
// and matches the file's size and hash. Otherwise FailedPrecondition naming
// `path` and why (no record, or a size or hash that differs), ending "not
// made by ember, or changed since; remove it yourself". Reads the whole file
// only when its size matches the record. Errors of reading the file are
// returned as they are.
absl::Status CheckMadeByEmber(const std::string& path);

}  // namespace ember

#endif  // EMBER_STORAGE_BASE_OUTPUT_RECORD_H_
