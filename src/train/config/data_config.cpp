#include "train/config/data_config.h"

#include "base/error.h"

namespace parallm {

void DataConfig::validate() const {
  PX_CHECK(!train.empty(), "no training data: set [data] train in the config or --data");
}

}  // namespace parallm
