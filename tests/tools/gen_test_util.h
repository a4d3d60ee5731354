// Helpers shared by the generator tests (`ember gen`): where a generator
// writes, and its text read back as rows of tab-separated fields.
#ifndef EMBER_TESTS_TOOLS_GEN_TEST_UTIL_H_
#define EMBER_TESTS_TOOLS_GEN_TEST_UTIL_H_

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "tools/gen/gen_output.h"

namespace ember::testing {

// One row per '\n'-terminated line (a last line without '\n' counts too),
// split at every tab; empty fields are kept.
inline std::vector<std::vector<std::string>> TabRows(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> cols;
    size_t start = 0;
    for (size_t tab; (tab = line.find('\t', start)) != std::string::npos;
         start = tab + 1) {
      cols.push_back(line.substr(start, tab - start));
    }
    cols.push_back(line.substr(start));
    rows.push_back(std::move(cols));
  }
  return rows;
}

// Output options for `path` on `threads` threads, no progress.
inline tools::gen::GenOutputOptions GenOutputTo(const std::string& path,
                                                int threads = 2) {
  tools::gen::GenOutputOptions o;
  o.path = path;
  o.threads = threads;
  return o;
}

}  // namespace ember::testing

#endif  // EMBER_TESTS_TOOLS_GEN_TEST_UTIL_H_
