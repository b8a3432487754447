// DataConfig: the [data] table (--data, --val-data): token shards to train
// and validate on, and whether the global sample order is shuffled. The
// order depends only on the files, the seed and the sequence length, never
// on the layout (data/data_loader.h).
#pragma once
#include <string>
#include <vector>

namespace parallm {

struct DataConfig {
  std::vector<std::string> train;  // llm.c token shards
  std::vector<std::string> val;    // none: no validation loss
  bool shuffle = true;

  void validate() const;
};

}  // namespace parallm
