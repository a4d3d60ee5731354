// Progress lines for long jobs, on stderr.
#ifndef EMBER_STORAGE_BASE_PROGRESS_H_
#define EMBER_STORAGE_BASE_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace ember::tools {

// On a TTY: one line rewritten in place ("\r"), at most every 0.2 s and
// whenever the phase changes. Otherwise (a log file, a pipe): one full,
// newline-terminated line about every `log_interval_seconds` (0: at every
// update), never rewritten. A phase with a count ("edges", "rows") shows
// its rate, and with a known total its ETA, once it has a rate: no line
// says "0 edges/s" because nothing was measured yet, and in logs a counted
// phase prints nothing until it has one. A step without a count (unit "")
// is printed when it starts. Not thread-safe.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool enabled, double log_interval_seconds = 10.0);
  // The same, with the TTY check made by the caller (for tests).
  ProgressPrinter(bool enabled, double log_interval_seconds, bool tty);
  // `done`/`total` in `unit`s; total 0 means unknown (no ETA). `extra` is
  // appended (e.g. "loss 0.31"). Throttled as above; `force` prints
  // regardless (without a rate if there is none yet).
  void Update(const std::string& phase, uint64_t done, uint64_t total,
              const std::string& unit, const std::string& extra = "",
              bool force = false);
  // Ends the in-place line on a TTY.
  void Finish();

 private:
  bool enabled_;
  bool tty_;
  double interval_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_;  // last line printed
  bool printed_ = false;
  std::string last_phase_;
  std::chrono::steady_clock::time_point phase_start_;
  uint64_t phase_start_done_ = 0;  // `done` at the phase's first update
  bool line_open_ = false;
};

// "1.5 G", "320 M", "12.0 k" style numbers.
std::string HumanCount(double v);
std::string HumanBytes(double bytes);
// "4.2s", "37s", "3m05s", "2h07m".
std::string HumanSeconds(double seconds);
// A byte count as a --memory-budget value that parses back to it: "6G",
// "512M", "100K" when exact, else plain bytes.
std::string ByteSizeText(uint64_t bytes);

}  // namespace ember::tools

#endif  // EMBER_STORAGE_BASE_PROGRESS_H_
