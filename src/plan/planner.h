// `parallm plan`: every layout of a model on N devices (tp dividing the
// heads and at most a node, pp dividing the layers, cp dividing the
// sequence, dp the rest; micro-batch sizes dividing the batch; 1F1B,
// interleaved (v stages, micro-batches a multiple of pp) and ZB-H1; every
// recompute mode; ZeRO 0-3, only 0-1 with pp as parallm's runtime supports),
// pruned by the memory model against the device's memory, ranked by the
// step-time model. Pure functions: no device is touched.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "plan/device_profile.h"
#include "plan/memory_model.h"
#include "plan/step_time.h"

namespace parallm {

struct PlanRequest {
  ModelConfig model;
  int devices = 8;
  int64_t seq_len = 2048;
  int64_t global_batch = 512;
  DeviceProfile device;
  // Sizes the user fixed: tp, pp, dp, cp, mb (micro-batch), v (virtual
  // stages), zero, recompute (none|selective|full), sp (0|1: sequence
  // parallelism, searched both ways under tp), schedule (1f1b|interleaved|zb);
  // a layout that disagrees is not considered.
  std::map<std::string, int> fixed;
  // MoE: the busiest ep rank's expert load per ep size (plan/ep_load.h).
  std::map<int, double> ep_max_load;
  // Whose activations prune by memory: Megatron-LM's (Korthikanti et al.,
  // with the s^2 attention scores unless recomputed) for a published GPU,
  // parallm's own layers (a flash kernel: no scores kept) for a machine that
  // runs parallm (default_activation_model).
  ActivationModel activation_model = ActivationModel::Megatron16;
  // Layouts predicted within this fraction of the fastest are taken as
  // equal (the model cannot rank them: docs/planner.md "Ties"); among them
  // the one with the fewest blocking exchanges per step (StepTime::syncs)
  // comes first, since every exchange exposes the step to waits the model
  // prices only on average; among equal counts the least time on the wire
  // (StepTime::wire_s), for the same reason. 0: rank by predicted time alone.
  double tie_tolerance = 0.02;
};

// parallm's own count (Parallm) on a calibrated machine, where the layouts
// run parallm's CPU layers; Megatron-LM's on a built-in GPU profile, whose
// published configurations it describes.
ActivationModel default_activation_model(const DeviceProfile& d);

struct PlanCandidate {
  MemoryQuery query;
  StepTime time;
  double memory_bytes = 0;
};

struct PlanResult {
  std::vector<PlanCandidate>
      best;  // fastest first, ties (PlanRequest::tie_tolerance) by syncs, wire
  int64_t enumerated = 0, fit = 0;
  int tied = 1;  // the leading candidates taken as equal (1: no tie)
};

PlanResult plan_layouts(const PlanRequest& r, size_t keep = 10);

// "tp=8 pp=16 dp=8 cp=1 mb=1 v=1 zero=1 ..." -> the fixed map; unknown keys
// and bad values are errors naming them.
std::map<std::string, int> parse_fixed(const std::vector<std::string>& items);

// The `mpirun ... parallm train ...` line that runs a candidate.
std::string train_command_line(const PlanCandidate& c, const std::string& model_name,
                               int64_t global_batch);
// The candidates with their layout keys, memory and time breakdown and
// command line (`parallm plan --json`).
nlohmann::json plan_result_json(const PlanResult& res, const std::string& model_name,
                                int64_t global_batch);
// One line per candidate: layout, memory, predicted step time, TFLOP/s, MFU.
std::string describe_layout(const MemoryQuery& q);

}  // namespace parallm
