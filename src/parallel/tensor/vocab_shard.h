// The slice of the vocabulary a tensor-parallel rank holds (Megatron's
// vocab-parallel embedding and head). The vocabulary is padded up to a
// multiple of tp so every rank holds the same number of rows; padded rows
// (ids >= vocab) are stored but never read: no token looks them up and the
// loss excludes their logits, so padding does not change the loss.
#pragma once
#include <algorithm>
#include <cstdint>

namespace parallm {

struct VocabShard {
  int64_t vocab = 0;   // the model's vocabulary
  int64_t padded = 0;  // vocab rounded up to a multiple of tp
  int64_t begin = 0;   // first id of this rank's rows
  int64_t rows = 0;    // padded / tp rows stored here
  int64_t valid = 0;   // rows that are real ids (rows, fewer on the last ranks)

  static VocabShard of(int64_t vocab, int tp, int rank) {
    VocabShard s;
    s.vocab = vocab;
    s.padded = (vocab + tp - 1) / tp * tp;
    s.rows = s.padded / tp;
    s.begin = rank * s.rows;
    s.valid = std::clamp<int64_t>(vocab - s.begin, 0, s.rows);
    return s;
  }
};

}  // namespace parallm
