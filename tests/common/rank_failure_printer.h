// For MPI test binaries: gtest prints failures only on the rank that writes
// the report, so this listener echoes every rank's failures to stderr,
// prefixed with the rank.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>

namespace parallm::testing {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& r) override {
    if (r.failed())
      std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                   r.file_name() ? r.file_name() : "?", r.line_number(), r.summary());
  }

 private:
  int rank_;
};

}  // namespace parallm::testing
