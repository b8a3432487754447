#include "train/config/parallelism_config.h"

#include "base/error.h"
#include "parallel/context/cp_group.h"
#include "parallel/pipeline/schedule.h"

namespace parallm {

void ParallelismConfig::infer_dp(int world_size) {
  const int rest = tp * pp * cp;
  if (dp.dp != 1 || world_size <= 0 || rest <= 0 || world_size % rest != 0) return;
  dp.dp = world_size / rest;
}

void ParallelismConfig::validate() const {
  PX_CHECK(pp >= 1, "pipeline parallel size (--pp) must be at least 1, got {}", pp);
  PX_CHECK(virtual_stages >= 1, "--virtual-stages must be at least 1, got {}", virtual_stages);
  pipeline::schedule_kind_from_name(schedule);  // a typo is an error even when unused
  PX_CHECK(cp >= 1, "context parallel size (--cp) must be at least 1, got {}", cp);
  // Expert layers fold dp x cp into ep x expert-dp (grid/rank_grid.h).
  PX_CHECK(ep >= 1 && (dp.dp * cp) % ep == 0,
           "expert parallel size (--ep {}) must divide data parallel size (--dp {}) x context "
           "parallel size (--cp {}) = {}",
           ep, dp.dp, cp, dp.dp * cp);
  const CpComm mode = cp_comm_from_name(cp_comm);
  if (cp > 1) ulysses_degree_for(mode, cp, ulysses_degree);
  PX_CHECK(ulysses_degree == 0 || mode == CpComm::Hybrid,
           "--ulysses-degree ({}) applies to --cp-comm a2a+ring only (got '{}')", ulysses_degree,
           cp_comm);
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
