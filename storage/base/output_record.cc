#include "storage/base/output_record.h"

#include <xxhash.h>

#include <algorithm>
#include <optional>
#include <span>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "storage/base/file_system.h"
#include "storage/base/file_util.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

constexpr char kRecordSuffix[] = ".ember-made";
constexpr char kRecordHeader[] = "ember-output 1";
constexpr char kRefusalTail[] = ": not made by ember, or changed since; remove it yourself";
// Largest record read; a real one is under 64 bytes.
constexpr size_t kRecordMaxBytes = 4096;
// Read size when fingerprinting an existing file.
constexpr size_t kReadBytes = 1 << 20;

absl::Status NotOurs(const std::string& path, std::string_view why) {
  return absl::FailedPreconditionError(absl::StrCat(path, " ", internal::Sv(why), kRefusalTail));
}

// The whole of a small file; NotFound when it is missing.
absl::StatusOr<std::string> ReadSmall(FileSystem* fs, const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, fs->OpenForRead(path));
  std::string text(kRecordMaxBytes, '\0');
  ASSIGN_OR_RETURN(const size_t n, file->ReadAt(0, std::span<char>(text)));
  text.resize(n);
  return text;
}

// The fingerprint a record's text states; nullopt when it is not a record.
std::optional<OutputFingerprint> ParseRecord(std::string_view text) {
  const std::vector<absl::string_view> lines =
      absl::StrSplit(internal::Sv(text), '\n', absl::SkipEmpty());
  if (lines.size() != 3 || lines[0] != kRecordHeader) return std::nullopt;
  OutputFingerprint f;
  if (!absl::StartsWith(lines[1], "size ") || !absl::SimpleAtoi(lines[1].substr(5), &f.size)) {
    return std::nullopt;
  }
  if (!absl::StartsWith(lines[2], "xxh3 ") || !absl::SimpleHexAtoi(lines[2].substr(5), &f.hash)) {
    return std::nullopt;
  }
  return f;
}

}  // namespace

struct OutputHasher::Rep {
  XXH3_state_t* state = XXH3_createState();
  ~Rep() { XXH3_freeState(state); }
};

OutputHasher::OutputHasher() : rep_(std::make_unique<Rep>()) { XXH3_64bits_reset(rep_->state); }
OutputHasher::~OutputHasher() = default;

void OutputHasher::Update(std::string_view data) {
  XXH3_64bits_update(rep_->state, data.data(), data.size());
  size_ += data.size();
}

OutputFingerprint OutputHasher::Finish() const { return {size_, XXH3_64bits_digest(rep_->state)}; }

std::string OutputRecordPath(const std::string& path) {
  const std::string::size_type slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "" : path.substr(0, slash + 1);
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  return absl::StrCat(dir, ".", name, kRecordSuffix);
}

std::string OutputRecordText(const OutputFingerprint& fingerprint) {
  return absl::StrFormat("%s\nsize %d\nxxh3 %016x\n", kRecordHeader, fingerprint.size,
                         fingerprint.hash);
}

absl::Status CheckMadeByEmber(const std::string& path) {
  FileSystem* fs = CurrentFileSystem();
  const std::string record_path = OutputRecordPath(path);
  absl::StatusOr<std::string> text = ReadSmall(fs, record_path);
  if (absl::IsNotFound(text.status())) {
    return NotOurs(path, absl::StrCat("exists and has no record ", record_path));
  }
  RETURN_IF_ERROR(text.status());
  const std::optional<OutputFingerprint> recorded = ParseRecord(*text);
  if (!recorded.has_value()) {
    return NotOurs(path, absl::StrCat("exists and its record ", record_path, " is malformed"));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ReadableFile> file, fs->OpenForRead(path));
  ASSIGN_OR_RETURN(const uint64_t size, file->Size());
  if (size != recorded->size) {
    return NotOurs(path,
                   absl::StrFormat("has %d bytes where ember wrote %d", size, recorded->size));
  }
  OutputHasher hasher;
  std::vector<char> buffer(std::min<uint64_t>(kReadBytes, std::max<uint64_t>(size, 1)));
  for (uint64_t offset = 0; offset < size;) {
    ASSIGN_OR_RETURN(const size_t n, file->ReadAt(offset, std::span<char>(buffer)));
    if (n == 0) break;
    hasher.Update(std::string_view(buffer.data(), n));
    offset += n;
  }
  if (!(hasher.Finish() == *recorded)) {
    return NotOurs(path, "differs from what ember wrote there (its hash changed)");
  }
  return absl::OkStatus();
}

}  // namespace ember
