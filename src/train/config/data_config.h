// DataConfig: the [data] table (--data, --val-data): llm.c token shards and
// Megatron dataset prefixes to train and validate on (train may be a blend in
// Megatron's syntax, "0.7 A 0.3 B"), and whether the global sample order is
// shuffled. The
// order depends only on the files, the seed and the sequence length, never
// on the layout (data/data_loader.h).
#pragma once
#include <string>
#include <vector>

namespace parallm {

struct DataConfig {
  std::vector<std::string> train;  // shards / Megatron prefixes, or a blend
  std::vector<std::string> val;    // none: no validation loss
  bool shuffle = true;

  void validate() const;
};

}  // namespace parallm
