#include "storage/internal/writer_lock.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <string_view>

#include "absl/strings/str_cat.h"
#include "storage/base/file_util.h"

namespace ember::internal {
namespace {

constexpr size_t kMaxCommandChars = 300;

std::string LockPath(const std::string& graph_dir) { return graph_dir + "/LOCK"; }

// This process's argv joined by spaces (from /proc/self/cmdline), cut to
// kMaxCommandChars; "" where /proc is not readable.
std::string OwnCommand() {
  absl::StatusOr<std::string> cmdline = ReadFile("/proc/self/cmdline");
  if (!cmdline.ok()) return "";
  std::string command = *std::move(cmdline);
  while (!command.empty() && command.back() == '\0') command.pop_back();
  for (char& c : command) {
    if (c == '\0' || c == '\n') c = ' ';
  }
  if (command.size() > kMaxCommandChars) command.resize(kMaxCommandChars);
  return command;
}

// Replaces the LOCK file's text with this process's identity. Best effort:
// the text only improves readers' messages.
void RecordSelf(FileLock& lock) {
  const std::string text = absl::StrCat("pid ", ::getpid(), "\ncommand ", OwnCommand(), "\n");
  lock.Rewrite(text).IgnoreError();
}

bool Alive(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

// The value of the line "<key> <value>" in `text`, or nullopt.
std::optional<std::string_view> Field(std::string_view text, std::string_view key) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) return std::nullopt;  // torn last line
    std::string_view line = text.substr(start, end - start);
    if (line.size() > key.size() && line.substr(0, key.size()) == key &&
        line[key.size()] == ' ') {
      return line.substr(key.size() + 1);
    }
    start = end + 1;
  }
  return std::nullopt;
}

}  // namespace

absl::StatusOr<std::unique_ptr<FileLock>> AcquireWriterLock(const std::string& graph_dir) {
  const std::string lock_path = LockPath(graph_dir);
  absl::StatusOr<std::unique_ptr<FileLock>> lock = CurrentFileSystem()->LockFile(lock_path);
  if (!lock.ok()) {
    // EWOULDBLOCK: another holder.
    if (!absl::IsUnavailable(lock.status())) return lock.status();
    const std::optional<std::string> holder = LiveWriter(graph_dir);
    return absl::FailedPreconditionError(
        absl::StrCat(graph_dir, " is locked by another writer (", lock_path,
                     holder.has_value() ? absl::StrCat(": ", *holder) : "", ")"));
  }
  RecordSelf(**lock);
  return lock;
}

std::optional<std::string> LiveWriter(const std::string& graph_dir) {
  absl::StatusOr<std::string> text = ReadFile(LockPath(graph_dir));
  if (!text.ok()) return std::nullopt;
  const std::optional<std::string_view> pid_text = Field(*text, "pid");
  if (!pid_text.has_value()) return std::nullopt;
  pid_t pid = 0;
  const auto [end, ec] =
      std::from_chars(pid_text->data(), pid_text->data() + pid_text->size(), pid);
  if (ec != std::errc() || end != pid_text->data() + pid_text->size() || pid <= 0 ||
      !Alive(pid)) {
    return std::nullopt;
  }
  const std::string_view command = Field(*text, "command").value_or("");
  return absl::StrCat("pid ", pid, " (", Sv(command.empty() ? "command unknown" : command), ")");
}

}  // namespace ember::internal
