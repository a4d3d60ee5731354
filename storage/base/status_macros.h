// Status plumbing shared by every module: early-return helpers for
// absl::Status / absl::StatusOr, and EMBER_CHECK for internal invariants.
#ifndef EMBER_STORAGE_BASE_STATUS_MACROS_H_
#define EMBER_STORAGE_BASE_STATUS_MACROS_H_

#include <cstdio>
#include <cstdlib>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define EMBER_CONCAT_INNER_(a, b) a##b
#define EMBER_CONCAT_(a, b) EMBER_CONCAT_INNER_(a, b)

// Returns `expr` from the enclosing function when it is not OK.
#define RETURN_IF_ERROR(expr)                       \
  do {                                              \
    ::absl::Status ember_status_ = (expr);          \
    if (!ember_status_.ok()) return ember_status_;  \
  } while (0)

// `ASSIGN_OR_RETURN(auto x, MakeX());` declares x from a StatusOr or returns
// its error.
#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(EMBER_CONCAT_(ember_statusor_, __LINE__), lhs, expr)
#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(tmp).value()

// A broken internal invariant is a bug: abort with file and line.
#define EMBER_CHECK(cond)                                                  \
  do {                                                                     \
    if (!(cond)) {                                                         \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, \
                   #cond);                                                 \
      std::abort();                                                        \
    }                                                                      \
  } while (0)

#endif  // EMBER_STORAGE_BASE_STATUS_MACROS_H_
