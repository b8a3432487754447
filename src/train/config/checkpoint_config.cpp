#include "train/config/checkpoint_config.h"

#include "base/error.h"

namespace parallm {

void CheckpointConfig::validate() const {
  PX_CHECK(save_interval >= 0 && keep >= 0 && exit_interval >= 0,
           "save_interval ({}), keep ({}) and exit_interval ({}) must be >= 0", save_interval, keep,
           exit_interval);
  PX_CHECK(save_interval == 0 || !save_dir.empty(), "--save-interval {} needs --save DIR",
           save_interval);
  PX_CHECK(!resume || !save_dir.empty() || !load_dir.empty(), "--resume needs --save or --load");
}

}  // namespace parallm
