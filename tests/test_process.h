// Test helpers for running the `ember` binary (or any program) as a child
// process: start it with stdout and stderr captured to files, watch it from
// outside, kill it, and collect its exit status and output; or run a shell
// command line.
#ifndef EMBER_TESTS_TEST_PROCESS_H_
#define EMBER_TESTS_TEST_PROCESS_H_

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

extern char** environ;

namespace ember::testing {

// The bytes of a file ("" when it cannot be read).
inline std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs `command` with /bin/sh; its exit code, or -1 if it did not exit.
inline int RunShell(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// How a child process ended, and what it printed.
struct ProcessResult {
  int exit_code = -1;   // WEXITSTATUS, or -1 if killed by a signal
  int term_signal = 0;  // the signal that ended it, if any
  long max_rss_kib = 0;  // peak resident set size (getrusage's ru_maxrss)
  std::string out;
  std::string err;
};

// A child process running argv[0] (a path, not searched in PATH) with
// stdin read from `stdin_path` (never the test runner's own) and stdout and
// stderr sent to `<capture_prefix>.stdout` and `.stderr`. The destructor
// kills and reaps a child still running.
class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& capture_prefix,
               const std::string& stdin_path = "/dev/null")
      : out_path_(capture_prefix + ".stdout"), err_path_(capture_prefix + ".stderr") {
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, stdin_path.c_str(), O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, out_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&actions, 2, err_path_.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    const int rc = posix_spawn(&pid_, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      ADD_FAILURE() << "posix_spawn(" << argv[0] << "): " << std::strerror(rc);
      pid_ = -1;
    }
  }
  ~ChildProcess() {
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      Wait();
    }
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0; }

  // True once the child has exited (reaps it); true if it never started.
  bool Exited() {
    if (reaped_ || pid_ <= 0) return true;
    int st;
    if (::wait4(pid_, &st, WNOHANG, &usage_) == pid_) {
      status_ = st;
      reaped_ = true;
    }
    return reaped_;
  }

  void Kill() {
    if (pid_ > 0 && !reaped_) ::kill(pid_, SIGKILL);
  }

  // Waits for the child to end.
  ProcessResult Wait() {
    if (pid_ > 0 && !reaped_) {
      int st;
      while (::wait4(pid_, &st, 0, &usage_) < 0 && errno == EINTR) {
      }
      status_ = st;
      reaped_ = true;
    }
    ProcessResult r;
    if (WIFEXITED(status_)) r.exit_code = WEXITSTATUS(status_);
    if (WIFSIGNALED(status_)) r.term_signal = WTERMSIG(status_);
    r.max_rss_kib = usage_.ru_maxrss;
    r.out = Out();
    r.err = Err();
    return r;
  }

  // What the child has written so far.
  std::string Out() const { return ReadWholeFile(out_path_); }
  std::string Err() const { return ReadWholeFile(err_path_); }

 private:
  struct rusage usage_ = {};
  std::string out_path_;
  std::string err_path_;
  pid_t pid_ = -1;
  bool reaped_ = false;
  int status_ = 0;
};

// Runs argv to completion, capturing into `capture_dir`/child.{stdout,stderr},
// with stdin read from `stdin_path`.
inline ProcessResult RunProcess(const std::vector<std::string>& argv,
                                const std::string& capture_dir,
                                const std::string& stdin_path = "/dev/null") {
  ChildProcess child(argv, capture_dir + "/child", stdin_path);
  return child.Wait();
}

// Polls `done()` every `interval` until it holds (true), the child exits
// (then one last check decides), or `timeout` passes (a last check too).
// A test can only watch a child from outside, through the files it writes.
template <typename Fn>
bool PollUntil(ChildProcess* child, Fn done, std::chrono::microseconds timeout,
               std::chrono::microseconds interval = std::chrono::milliseconds(1)) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    if (child->Exited()) return done();
    std::this_thread::sleep_for(interval);
  }
  return done();
}

}  // namespace ember::testing

#endif  // EMBER_TESTS_TEST_PROCESS_H_
