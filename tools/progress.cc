#include "tools/progress.h"

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

ProgressPrinter::ProgressPrinter(bool enabled, double log_interval_seconds)
    : enabled_(enabled),
      tty_(isatty(STDERR_FILENO) != 0),
      interval_(log_interval_seconds),
      start_(Clock::now()),
      last_(Clock::now() - std::chrono::hours(1)),
      phase_start_(Clock::now()) {}

void ProgressPrinter::Update(const std::string& phase, uint64_t done,
                             uint64_t total, const std::string& unit,
                             const std::string& extra, bool force) {
  if (!enabled_) return;
  const auto now = Clock::now();
  if (phase != last_phase_) {
    last_phase_ = phase;
    phase_start_ = now;
    force = true;
  }
  const double since_last = std::chrono::duration<double>(now - last_).count();
  if (!force && since_last < (tty_ ? 0.2 : interval_)) return;
  last_ = now;
  const double phase_secs = std::chrono::duration<double>(now - phase_start_).count();
  const double rate = phase_secs > 0 ? done / phase_secs : 0;
  std::string line = absl::StrFormat("%-6s %s", phase, HumanCount(done));
  if (unit.empty()) {
    line = absl::StrFormat("%-6s", phase);  // a step without a count
  } else if (total > 0) {
    absl::StrAppendFormat(&line, "/%s %s (%.1f%%)", HumanCount(total), unit,
                          100.0 * done / total);
  } else {
    absl::StrAppendFormat(&line, " %s", unit);
  }
  if (!unit.empty()) absl::StrAppendFormat(&line, "  %s %s/s", HumanCount(rate), unit);
  if (total > 0 && rate > 0 && done < total) {
    absl::StrAppendFormat(&line, "  ETA %.0fs", (total - done) / rate);
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
