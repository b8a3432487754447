#include "train/config/data_config.h"

#include "base/error.h"

namespace parallm {

void DataConfig::validate() const {
  PX_CHECK(!train.empty(), "no training data: set [data] train in the config or --data");
  PX_CHECK(docs.eod >= 0, "the end-of-document token (--eod-token) must be >= 0, got {}", docs.eod);
}

}  // namespace parallm
