#include "train/config/parallelism_config.h"

#include "base/error.h"
#include "parallel/pipeline/schedule.h"

namespace parallm {

void ParallelismConfig::validate() const {
  PX_CHECK(pp >= 1, "pipeline parallel size (--pp) must be at least 1, got {}", pp);
  PX_CHECK(virtual_stages >= 1, "--virtual-stages must be at least 1, got {}", virtual_stages);
  pipeline::schedule_kind_from_name(schedule);  // a typo is an error even when unused
  PX_CHECK(ep >= 1 && dp.dp % ep == 0,
           "expert parallel size (--ep {}) must divide data parallel size (--dp {})", ep, dp.dp);
  if (pp == 1) {
    PX_CHECK(virtual_stages == 1 && pp_layers.empty(),
             "--virtual-stages ({}) and --pp-layers ('{}') need --pp > 1", virtual_stages,
             pp_layers);
    return;
  }
  PX_CHECK(dp.zero <= 1,
           "ZeRO stage {} with pp {} is not supported yet (stages 2 and 3 reduce and gather "
           "per backward unit; use --zero 0 or 1)",
           dp.zero, pp);
}

}  // namespace parallm
