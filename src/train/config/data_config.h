// DataConfig: the [data] table (--data, --val-data): llm.c token shards and
// Megatron dataset prefixes to train and validate on (train may be a blend in
// Megatron's syntax, "0.7 A 0.3 B"), and whether the global sample order is
// shuffled. The order depends only on the files, the seed and the sequence
// length, never on the layout (data/data_loader.h). Packed documents (Megatron's
// --reset-attention-mask, --reset-position-ids, --eod-mask-loss) say how a
// window holding several EOD-separated documents is trained.
#pragma once
#include <string>
#include <vector>

#include "nn/packed_docs.h"

namespace parallm {

struct DataConfig {
  std::vector<std::string> train;  // shards / Megatron prefixes, or a blend
  std::vector<std::string> val;    // none: no validation loss
  bool shuffle = true;
  // The EOD id defaults to the end-of-text of `parallm tokenize`'s built-in
  // byte tokenizer (256); shards from another tokenizer name theirs
  // (--eod-token, e.g. 50256 for GPT-2's <|endoftext|>).
  static constexpr int32_t kDefaultEod = 256;
  PackedDocs docs{.eod = kDefaultEod};

  void validate() const;
};

}  // namespace parallm
