// The memory model: bytes per rank by category (parameters, gradients,
// optimizer states, activations, communication buffers) for a model, a layout
// and a training recipe, for the most loaded rank (the first pipeline stage,
// which holds the embedding and the most micro-batches in flight).
// Formulas (REFERENCE.md): model states as in the ZeRO paper (mixed precision
// with Adam: 2 + 2 + 12 bytes per parameter; ZeRO-1/2/3 divide the optimizer,
// then gradients, then parameters by the data-parallel degree); activations
// per layer as in Korthikanti et al. 2022, 16-bit: s*b*h*(34 + 5*a*s/h), with
// tensor parallel t: s*b*h*(10 + 24/t + 5*a*s/(h*t)), with sequence parallel:
// s*b*h*(34/t + 5*a*s/(h*t)); selective recompute drops the 5*a*s/h term; full
// recompute keeps 2*s*b*h per layer (plus one layer's working set). fp32
// doubles the activation bytes. ActivationModel::Parallm instead counts the
// tensors this implementation's layers save (plan/parallm_activations.h) and
// its mixed-precision state bytes (fp32 master + an unsharded 16-bit copy,
// fp32 gradients: parallm_state_bytes), so it can be held against the
// allocator. Parameter counts are exact per rank
// (tp shards, padded vocabulary, replicated norms and row-parallel biases).
// With LoRA (q.lora, plan/lora_memory.h) the base's bytes are `frozen` and
// parameters, gradients and optimizer states are the adapters' only.
// Experts (plan/moe_memory.h): E / ep of each MoE layer's experts per rank,
// ZeRO-1, 2 and 3 shard them over expert-dp; MoE activations assume an even load.
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "model/config.h"
#include "nn/precision.h"
#include "nn/recompute.h"
#include "optim/optimizer_config.h"
#include "parallel/pipeline/schedule.h"
#include "plan/lora_memory.h"

namespace parallm {

// Megatron16: Korthikanti et al.'s per-layer count (16-bit, Megatron-LM's
// layers). Parallm: what this implementation's layers save, on every device
// (the GPU runs the same layers through the op interface).
enum class ActivationModel { Megatron16, Parallm };

ActivationModel activation_model_from_name(const std::string& s);  // "megatron" | "parallm"
const char* activation_model_name(ActivationModel m);              // its inverse

struct MemoryQuery {
  ModelConfig model;
  int64_t seq_len = 2048;
  int64_t micro_batch = 1;
  int64_t micro_batches = 1;  // per step per data-parallel rank (GPipe holds them all)
  int tp = 1, pp = 1, dp = 1, cp = 1, ep = 1, virtual_stages = 1;
  // Experts' tp (--expert-tp): 1 (whole on every tp rank) or tp (each
  // expert split over the tp group as a dense MLP is; plan/moe_memory.h).
  int expert_tp = 1;
  pipeline::ScheduleKind schedule = pipeline::ScheduleKind::OneFOneB;
  bool sequence_parallel = false;
  int zero = 0;
  Precision precision = Precision::BF16;
  OptimizerKind optimizer = OptimizerKind::AdamW;
  Recompute recompute = Recompute::None;
  ActivationModel activation_model = ActivationModel::Megatron16;
  double bucket_mb = 25.0;
  LoraQuery lora;  // rank 0: full fine-tuning
  // Step time only (plan/step_time.h): for an ep size, the busiest ep
  // rank's expert rows over the mean per dispatch (the trainer's
  // moe.ep_max_load); an ep size not listed is taken as evenly loaded (1).
  std::map<int, double> ep_max_load;
  double ep_load_factor() const {
    const auto it = ep_max_load.find(ep);
    return ep > 1 && it != ep_max_load.end() ? std::max(1.0, it->second) : 1.0;
  }

  void validate() const;          // layout constraints, with the values in the message
  void validate_experts() const;  // MoE layouts the trainer refuses, with its messages
};

struct MemoryBreakdown {
  int64_t params_per_rank = 0;         // parameters held by the rank before ZeRO-3
  int64_t expert_params_per_rank = 0;  // of which routed experts' (E / ep per MoE layer)
  double parameters = 0, gradients = 0, optimizer = 0, activations = 0, communication = 0;
  double workspace = 0;          // Parallm model only: the LM head's logits chunk (freed each step)
  double frozen = 0;             // LoRA: the frozen base (16-bit or NF4), never sharded by ZeRO
  int64_t trainable_params = 0;  // per rank: all held parameters, or with LoRA the adapters
  double activation_per_layer = 0;  // bytes for one layer and one micro-batch (stage mean)
  double micro_batches_in_flight = 0;
  double total() const {
    return parameters + gradients + optimizer + activations + communication + workspace + frozen;
  }
};

MemoryBreakdown estimate_memory(const MemoryQuery& q);

struct MemorySuggestion {
  std::string change;  // "--recompute selective", "--zero 2", ...
  MemoryQuery query;
  double total = 0;
};
// Changes that make the estimate fit `device_bytes`, cheapest first (single
// changes in order of their usual cost in speed, then cumulative ones).
std::vector<MemorySuggestion> suggest_fits(const MemoryQuery& q, double device_bytes);

// "80GiB", "24GB", "512MiB", "1e9" -> bytes.
double parse_bytes(const std::string& s);

}  // namespace parallm
