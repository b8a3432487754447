#include "plan/device_profile.h"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace parallm {

namespace {

// A100 SXM 80 GB: 312 TFLOP/s dense bf16 and 2.0 TB/s HBM (NVIDIA data
// sheet); NVLink 3 600 GB/s both ways per GPU, ~230 GB/s all-reduce bus
// bandwidth in nccl-tests on DGX A100; one 200 Gb/s HDR NIC per GPU, ~23 GB/s.
// Large bf16 GEMMs reach ~80% of peak with cuBLAS.
DeviceProfile a100() {
  DeviceProfile d;
  d.name = "a100-80gb";
  d.peak_flops = 312e12;
  d.gemm_efficiency = 0.80;
  d.gemm_half_width = 128;
  d.memory_bytes = 80e9;
  d.memory_bytes_per_s = 2.0e12;
  d.devices_per_node = 8;
  d.intra_node = {.alpha_s = 10e-6, .bytes_per_s = 230e9};
  d.inter_node = {.alpha_s = 20e-6, .bytes_per_s = 23e9};
  return d;
}

// H100 SXM 80 GB: 989 TFLOP/s dense bf16, 3.35 TB/s HBM (data sheet); NVLink
// all-reduce bus bandwidth ~370 GB/s (ring), NDR 400 Gb/s IB ~46 GB/s per NIC
// (REFERENCE.md). Large bf16 GEMMs reach ~70% of peak.
DeviceProfile h100() {
  DeviceProfile d;
  d.name = "h100-80gb";
  d.peak_flops = 989e12;
  d.gemm_efficiency = 0.70;
  d.gemm_half_width = 256;
  d.memory_bytes = 80e9;
  d.memory_bytes_per_s = 3.35e12;
  d.devices_per_node = 8;
  d.intra_node = {.alpha_s = 8e-6, .bytes_per_s = 370e9};
  d.inter_node = {.alpha_s = 15e-6, .bytes_per_s = 46e9};
  return d;
}

}  // namespace

std::vector<std::string> builtin_profile_names() { return {"a100-80gb", "h100-80gb"}; }

DeviceProfile builtin_profile(const std::string& name) {
  if (name == "a100-80gb" || name == "a100") return a100();
  if (name == "h100-80gb" || name == "h100") return h100();
  PX_FAIL("unknown device profile '{}' (built in: a100-80gb, h100-80gb; or a JSON file)", name);
}

DeviceProfile load_profile(const std::string& path) {
  std::ifstream in(path);
  PX_CHECK(in.is_open(), "cannot open device profile '{}'", path);
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  PX_CHECK(j.is_object(), "{}: not a JSON object", path);
  DeviceProfile d;
  auto num = [&](const char* k, double& out) {
    PX_CHECK(j.contains(k) && j[k].is_number(), "{}: missing number '{}'", path, k);
    out = j[k].get<double>();
  };
  d.name = j.value("name", path);
  num("peak_flops", d.peak_flops);
  num("gemm_efficiency", d.gemm_efficiency);
  num("gemm_half_width", d.gemm_half_width);
  num("memory_bytes", d.memory_bytes);
  num("memory_bytes_per_s", d.memory_bytes_per_s);
  d.devices_per_node = j.value("devices_per_node", 8);
  PX_CHECK(j.contains("intra_node") && j.contains("inter_node"),
           "{}: needs 'intra_node' and 'inter_node' links", path);
  d.intra_node = link_cost_from_json(j["intra_node"], "intra_node", path);
  d.inter_node = link_cost_from_json(j["inter_node"], "inter_node", path);
  d.cores = j.value("cores", 0);
  if (j.contains("arrival_jitter")) num("arrival_jitter", d.arrival_jitter);  // else none
  PX_CHECK(d.arrival_jitter >= 0 && d.arrival_jitter < 1,
           "{}: arrival_jitter {} out of range [0, 1) (seconds^(1/2))", path, d.arrival_jitter);
  if (j.contains("precision")) d.precision = precision_from_name(j["precision"].get<std::string>());
  if (j.contains("ops")) {
    PX_CHECK(j["ops"].is_array() && !j["ops"].empty(), "{}: 'ops' must be a non-empty array", path);
    for (const auto& o : j["ops"]) d.ops.push_back(op_costs_from_json(o, path));
    PX_CHECK(d.cores > 0, "{}: a profile with measured 'ops' needs 'cores' (> 0)", path);
  }
  PX_CHECK(
      d.peak_flops > 0 && d.gemm_efficiency > 0 && d.gemm_efficiency <= 1 && d.devices_per_node > 0,
      "{}: peak_flops ({}) and devices_per_node ({}) must be positive and gemm_efficiency "
      "({}) in (0, 1]",
      path, d.peak_flops, d.devices_per_node, d.gemm_efficiency);
  return d;
}

void save_profile(const DeviceProfile& d, const std::string& path) {
  nlohmann::json j = {{"name", d.name},
                      {"peak_flops", d.peak_flops},
                      {"gemm_efficiency", d.gemm_efficiency},
                      {"gemm_half_width", d.gemm_half_width},
                      {"memory_bytes", d.memory_bytes},
                      {"memory_bytes_per_s", d.memory_bytes_per_s},
                      {"devices_per_node", d.devices_per_node},
                      {"intra_node", link_cost_to_json(d.intra_node)},
                      {"inter_node", link_cost_to_json(d.inter_node)},
                      {"cores", d.cores},
                      {"arrival_jitter", d.arrival_jitter},
                      {"precision", precision_name(d.precision)}};
  if (!d.ops.empty()) {
    j["ops"] = nlohmann::json::array();
    for (const OpCosts& o : d.ops) j["ops"].push_back(op_costs_to_json(o));
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp);
    PX_CHECK(out.is_open(), "cannot write device profile '{}'", tmp);
    out << j.dump(1) << "\n";
    PX_CHECK(out.good(), "writing device profile '{}' failed", tmp);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  PX_CHECK(!ec, "cannot move '{}' to '{}': {}", tmp, path, ec.message());
}

}  // namespace parallm
