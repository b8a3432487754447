// NCCL error messages (nccl_check.h).
#include "comm/nccl/nccl_check.h"

#include <fmt/format.h>

#include <string>

#include "base/error.h"

namespace parallm::comm {

void nccl_check(ncclResult_t r, const char* call, ncclComm_t comm, std::string_view context) {
  if (r == ncclSuccess) return;
  const char* last = ncclGetLastError(comm);
  const std::string detail = last != nullptr && last[0] != '\0' ? last : "no further detail";
  std::string hint;
  if (detail.find("Duplicate GPU") != std::string::npos)
    hint =
        "; two ranks of this group use the same GPU, and NCCL needs one GPU per rank: run at "
        "most as many ranks per node as there are visible GPUs";
  PX_FAIL("{} failed on {}: NCCL error {} ({}): {}{}", call, context, static_cast<int>(r),
          ncclGetErrorString(r), detail, hint);
}

}  // namespace parallm::comm
