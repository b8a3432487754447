// What the step-time model knows of a device and its links: dense 16-bit
// peak, the fraction of it large GEMMs reach, memory size and bandwidth, and
// an alpha-beta cost (latency + bytes / bandwidth, plan/link_cost.h) for each
// link level: inside a node (NVLink) and across nodes (one NIC per device).
// Built-in profiles use published figures (each field says its source);
// `--profile FILE.json` reads the same fields, e.g. as measured by a
// calibration run.
#pragma once
#include <string>
#include <vector>

#include "nn/precision.h"
#include "plan/link_cost.h"
#include "plan/op_costs.h"

namespace parallm {

struct DeviceProfile {
  std::string name;
  double peak_flops = 0;       // dense bf16/fp16 tensor FLOP/s
  double gemm_efficiency = 0;  // fraction of peak a large GEMM reaches
  // GEMMs narrower than this many columns per device lose efficiency
  // (e(d) = gemm_efficiency * d / (d + gemm_half_width)): tensor-parallel
  // splits make the weight matrices narrower.
  double gemm_half_width = 0;
  double memory_bytes = 0;
  double memory_bytes_per_s = 0;  // HBM bandwidth (the optimizer step is bound by it)
  int devices_per_node = 8;
  LinkCost intra_node, inter_node;

  // A calibrated CPU machine (`parallm calibrate`): the devices are ranks
  // sharing `cores` cores, training in `precision`, and the step's kernels
  // are priced from `ops` (one entry per measured thread count) instead of
  // peak x efficiency. Empty `ops`: the analytic GPU model.
  int cores = 0;
  Precision precision = Precision::BF16;
  std::vector<OpCosts> ops;
  // How a rank's arrival at a blocking collective spreads with the work
  // before it (plan/arrival_wait.h), seconds^(1/2); measured by calibrate,
  // 0 (no such wait) on the built-in profiles.
  double arrival_jitter = 0;

  double gemm_flops(double min_dim) const {
    return peak_flops * gemm_efficiency * min_dim / (min_dim + gemm_half_width);
  }
};

// "a100-80gb", "h100-80gb"; an unknown name lists the known ones.
DeviceProfile builtin_profile(const std::string& name);
std::vector<std::string> builtin_profile_names();
// A JSON file with the fields above (links as plan/link_cost.h writes them,
// "precision": "fp32", "ops": [op costs, plan/op_costs.h]).
DeviceProfile load_profile(const std::string& path);
// Writes it (to path + ".tmp", then renamed, so a failure leaves no half file).
void save_profile(const DeviceProfile& d, const std::string& path);

}  // namespace parallm
