#include "parallel/data/dp_options.h"

#include <algorithm>

#include "base/error.h"

namespace parallm {

DpMode dp_mode_from_name(std::string_view name) {
  if (name == "allreduce") return DpMode::AllReduce;
  if (name == "ps") return DpMode::ParameterServer;
  PX_FAIL("unknown --dp-mode '{}' (expected allreduce or ps)", name);
}

std::string_view dp_mode_name(DpMode m) { return m == DpMode::AllReduce ? "allreduce" : "ps"; }

int64_t DpOptions::bucket_elems() const {
  return std::max<int64_t>(1, static_cast<int64_t>(bucket_mb * 1024.0 * 1024.0 / 4.0));
}

void validate_dp_layout(const DpOptions& o, int world_size, int64_t global_batch,
                        int64_t micro_batch, int tp, int pp, int cp) {
  PX_CHECK(o.dp >= 1, "data parallel size must be positive, got {}", o.dp);
  PX_CHECK(o.zero >= 0 && o.zero <= 3, "--zero must be 0, 1, 2 or 3, got {}", o.zero);
  PX_CHECK(o.mode == DpMode::AllReduce || o.zero == 0,
           "--dp-mode ps keeps the optimizer on the server and cannot be combined with "
           "ZeRO stage {}",
           o.zero);
  PX_CHECK(o.bucket_mb > 0, "--bucket-mb must be positive, got {}", o.bucket_mb);
  PX_CHECK(tp >= 1, "tensor parallel size must be positive, got {}", tp);
  PX_CHECK(pp >= 1, "pipeline parallel size must be positive, got {}", pp);
  PX_CHECK(cp >= 1, "context parallel size must be positive, got {}", cp);
  if (cp > 1)
    PX_CHECK(world_size == pp * o.dp * cp * tp,
             "world size ({}) is not equal to pp ({}) x dp ({}) x cp ({}) x tp ({})", world_size,
             pp, o.dp, cp, tp);
  else if (pp > 1)
    PX_CHECK(world_size == pp * o.dp * tp,
             "world size ({}) is not equal to pp ({}) x dp ({}) x tp ({})", world_size, pp, o.dp,
             tp);
  else if (tp == 1)
    PX_CHECK(world_size == o.dp, "world size ({}) is not equal to dp ({})", world_size, o.dp);
  else
    PX_CHECK(world_size == o.dp * tp, "world size ({}) is not equal to dp ({}) x tp ({})",
             world_size, o.dp, tp);
  PX_CHECK(micro_batch > 0 && global_batch % (micro_batch * o.dp) == 0,
           "global batch size ({}) is not divisible by micro batch size ({}) times data "
           "parallel size ({})",
           global_batch, micro_batch, o.dp);
}

}  // namespace parallm
