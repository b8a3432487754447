#include "train/config/checkpoint_config.h"

#include "base/error.h"

namespace parallm {

void CheckpointConfig::validate() const {
  PX_CHECK(save_interval >= 0 && keep >= 0 && exit_interval >= 0,
           "save_interval ({}), keep ({}) and exit_interval ({}) must be >= 0", save_interval, keep,
           exit_interval);
  PX_CHECK(save_interval == 0 || !save_dir.empty(), "--save-interval {} needs --save DIR",
           save_interval);
  PX_CHECK(!resume || !save_dir.empty() || !load_dir.empty() || !snapshot_dir.empty(),
           "--resume needs --save, --snapshot or --load");
  PX_CHECK(snapshot_interval >= 0, "snapshot_interval must be >= 0, got {}", snapshot_interval);
  PX_CHECK((snapshot_interval > 0) == !snapshot_dir.empty(),
           "--snapshot DIR and --snapshot-interval N go together (got '{}' and {})", snapshot_dir,
           snapshot_interval);
  PX_CHECK(snapshot_dir.empty() || snapshot_dir != save_dir,
           "--snapshot and --save must be different directories, both are '{}'", save_dir);
}

}  // namespace parallm
