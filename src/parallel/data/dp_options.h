// Data-parallel options of a run (--dp, --zero, --dp-mode, --bucket-mb,
// --no-overlap) and the layout checks made before any allocation, with
// Megatron-style messages that name the constraint and the values. Every
// rank of a data-parallel group must use the same options.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace parallm {

// allreduce: every rank reduces gradients and updates (DDP, ZeRO).
// ps: gradients reduced to dp rank 0 (the server), which updates and
// broadcasts the parameters; kept to compare against all-reduce.
enum class DpMode { AllReduce, ParameterServer };
DpMode dp_mode_from_name(std::string_view name);  // "allreduce" | "ps"
std::string_view dp_mode_name(DpMode m);

struct DpOptions {
  int dp = 1;
  int zero = 0;  // 0 (DDP), 1 (optimizer states), 2 (+ gradients), 3 (+ parameters)
  DpMode mode = DpMode::AllReduce;
  double bucket_mb = 25.0;       // gradient bucket size in MiB
  bool overlap = true;           // reduce buckets during backward (false: after it)
  int64_t bucket_elems() const;  // fp32 elements per bucket, at least 1
};

// Checks the options alone and against the launch: world size (= dp x tp),
// batch sizes.
void validate_dp_layout(const DpOptions& o, int world_size, int64_t global_batch,
                        int64_t micro_batch, int tp = 1, int pp = 1, int cp = 1);

}  // namespace parallm
