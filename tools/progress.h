// Progress lines for long jobs: on a TTY one line rewritten in place at most
// every 0.2 s; otherwise one line per `interval` seconds (for logs).
#ifndef EMBER_TOOLS_PROGRESS_H_
#define EMBER_TOOLS_PROGRESS_H_

#include <chrono>
#include <cstdint>
#include <string>

namespace ember::tools {

class ProgressPrinter {
 public:
  explicit ProgressPrinter(bool enabled, double log_interval_seconds = 5.0);
  // `done`/`total` in `unit`s; total 0 means unknown (no ETA). `extra` is
  // appended (e.g. "loss 0.31"). Throttled; `force` prints regardless.
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
  std::chrono::steady_clock::time_point last_;
  std::string last_phase_;
  std::chrono::steady_clock::time_point phase_start_;
  bool line_open_ = false;
};

// "1.5 G", "320 M", "12.0 k" style numbers.
std::string HumanCount(double v);
std::string HumanBytes(double bytes);
// A byte count as a --memory-budget value that parses back to it: "6G",
// "512M", "100K" when exact, else plain bytes.
std::string ByteSizeText(uint64_t bytes);

}  // namespace ember::tools

#endif  // EMBER_TOOLS_PROGRESS_H_
