// Packed documents (Megatron's --reset-attention-mask, --reset-position-ids,
// --eod-mask-loss): a training sequence holds several documents separated
// by the end-of-document token (EOD). A document ends with its EOD; the
// next one starts at the token after it. Everything here is a function of a
// row's input tokens alone, so every rank (any cp chunk, any pipeline stage)
// derives the same document starts from the same full (B, T) inputs.
// Invariant: starts are positions in the full sequence, non-decreasing
// along a row, and start(p) <= p.
#pragma once
#include <cstdint>
#include <vector>

namespace parallm {

struct PackedDocs {
  bool reset_attention_mask = false;  // attend only within the token's document
  bool reset_position_ids = false;    // positions restart at 0 at every document start
  bool eod_mask_loss = false;         // no loss where the input token is the EOD
  int32_t eod = -1;                   // the EOD token id (must be set when any flag is on)
  bool any() const { return reset_attention_mask || reset_position_ids || eod_mask_loss; }
};

// start[b * T + p]: the first position of the document holding position p
// of row b (one past the last EOD before p, or 0).
std::vector<int64_t> document_starts(const int32_t* inputs, int64_t B, int64_t T, int32_t eod);
// Tokens that count in the loss among n: target >= 0, and input not the EOD
// under eod_mask_loss. The normaliser of the global token mean.
int64_t loss_token_count(const int32_t* inputs, const int32_t* targets, int64_t n,
                         const PackedDocs& docs);

}  // namespace parallm
