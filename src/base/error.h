// Errors: one exception type for every user-facing failure, and PX_CHECK,
// which formats a message naming the constraint and the values involved.
// Invariant: a message should let the user fix the input without a debugger.
#pragma once
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>
#include <string>

namespace parallm {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// Throws Error(fmt::format(...)) when cond is false.
#define PX_CHECK(cond, ...)                                        \
  do {                                                             \
    if (!(cond)) throw ::parallm::Error(fmt::format(__VA_ARGS__)); \
  } while (0)

#define PX_FAIL(...) throw ::parallm::Error(fmt::format(__VA_ARGS__))

}  // namespace parallm
