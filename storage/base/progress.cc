#include "storage/base/progress.h"

#include <unistd.h>

#include <cstdio>
#include <initializer_list>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace ember::tools {

using Clock = std::chrono::steady_clock;

std::string HumanCount(double v) {
  if (v >= 1e9) return absl::StrFormat("%.2f G", v / 1e9);
  if (v >= 1e6) return absl::StrFormat("%.2f M", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%.1f k", v / 1e3);
  return absl::StrFormat("%.0f", v);
}

std::string HumanBytes(double b) {
  if (b >= 1024.0 * 1024 * 1024) return absl::StrFormat("%.2f GiB", b / (1024.0 * 1024 * 1024));
  if (b >= 1024.0 * 1024) return absl::StrFormat("%.1f MiB", b / (1024.0 * 1024));
  if (b >= 1024.0) return absl::StrFormat("%.1f KiB", b / 1024.0);
  return absl::StrFormat("%.0f B", b);
}

std::string HumanSeconds(double s) {
  if (s < 10) return absl::StrFormat("%.1fs", s);
  if (s < 60) return absl::StrFormat("%.0fs", s);
  const uint64_t whole = static_cast<uint64_t>(s + 0.5);
  if (whole < 3600) return absl::StrFormat("%dm%02ds", whole / 60, whole % 60);
  return absl::StrFormat("%dh%02dm", whole / 3600, whole % 3600 / 60);
}

ProgressPrinter::ProgressPrinter(bool enabled, double log_interval_seconds)
    : ProgressPrinter(enabled, log_interval_seconds, isatty(STDERR_FILENO) != 0) {}

ProgressPrinter::ProgressPrinter(bool enabled, double log_interval_seconds, bool tty)
    : enabled_(enabled),
      tty_(tty),
      interval_(log_interval_seconds),
      start_(Clock::now()),
      last_(start_),
      phase_start_(start_) {}

void ProgressPrinter::Update(const std::string& phase, uint64_t done,
                             uint64_t total, const std::string& unit,
                             const std::string& extra, bool force) {
  if (!enabled_) return;
  const auto now = Clock::now();
  const bool new_phase = phase != last_phase_;
  if (new_phase) {
    last_phase_ = phase;
    phase_start_ = now;
    phase_start_done_ = done;
  }
  const bool counted = !unit.empty();
  const double phase_secs = std::chrono::duration<double>(now - phase_start_).count();
  // Measured over this phase's updates only: the work before its first
  // update took an unknown time.
  const double rate = counted && phase_secs > 0 && done > phase_start_done_
                          ? (done - phase_start_done_) / phase_secs
                          : 0;
  const double since_last = std::chrono::duration<double>(now - last_).count();
  bool due;
  if (tty_) {
    due = new_phase || since_last >= 0.2;
  } else if (counted) {
    due = rate > 0 && (!printed_ || since_last >= interval_);
  } else {
    due = new_phase;
  }
  if (!force && !due) return;
  last_ = now;
  printed_ = true;
  std::string line = absl::StrFormat("%-6s", phase);
  if (counted) {
    absl::StrAppend(&line, " ", HumanCount(done));
    if (total > 0) {
      absl::StrAppendFormat(&line, "/%s %s (%.1f%%)", HumanCount(total), unit,
                            100.0 * done / total);
    } else {
      absl::StrAppend(&line, " ", unit);
    }
    if (rate > 0) absl::StrAppendFormat(&line, "  %s %s/s", HumanCount(rate), unit);
    if (total > 0 && rate > 0 && done < total) {
      absl::StrAppend(&line, "  ETA ", HumanSeconds((total - done) / rate));
    }
  }
  if (!extra.empty()) absl::StrAppend(&line, "  ", extra);
  absl::StrAppendFormat(&line, "  [%.1fs]",
                        std::chrono::duration<double>(now - start_).count());
  if (tty_) {
    std::fprintf(stderr, "\r\033[K%s", line.c_str());
    line_open_ = true;
  } else {
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  std::fflush(stderr);
}

void ProgressPrinter::Finish() {
  if (enabled_ && tty_ && line_open_) std::fputc('\n', stderr);
  line_open_ = false;
}

std::string ByteSizeText(uint64_t bytes) {
  for (auto [shift, suffix] : std::initializer_list<std::pair<int, const char*>>{
           {40, "T"}, {30, "G"}, {20, "M"}, {10, "K"}}) {
    const uint64_t unit = uint64_t{1} << shift;
    if (bytes >= unit && bytes % unit == 0) return absl::StrCat(bytes / unit, suffix);
  }
  return absl::StrCat(bytes);
}

}  // namespace ember::tools
