#include "nn/packed_docs.h"

#include <cstddef>

namespace parallm {

std::vector<int64_t> document_starts(const int32_t* inputs, int64_t B, int64_t T, int32_t eod) {
  std::vector<int64_t> start(static_cast<size_t>(B * T));
  for (int64_t b = 0; b < B; ++b) {
    int64_t s = 0;
    for (int64_t p = 0; p < T; ++p) {
      start[b * T + p] = s;
      if (inputs[b * T + p] == eod) s = p + 1;  // the EOD closes its document
    }
  }
  return start;
}

int64_t loss_token_count(const int32_t* inputs, const int32_t* targets, int64_t n,
                         const PackedDocs& docs) {
  int64_t count = 0;
  for (int64_t i = 0; i < n; ++i)
    count += targets[i] >= 0 && !(docs.eod_mask_loss && inputs[i] == docs.eod);
  return count;
}

}  // namespace parallm
