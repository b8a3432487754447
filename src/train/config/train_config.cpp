// TrainConfig::validate: each part checks its own values; the checks here
// are the ones that need two parts or the model.
#include "train/config/train_config.h"

#include <fmt/format.h>

#include <string_view>

#include "base/error.h"
#include "model/layers/attention.h"
#include "parallel/context/cp_chunks.h"
#include "parallel/context/cp_group.h"
#include "train/config/pipeline_config.h"

namespace parallm {

namespace {

// What the GPU does not run yet (the ops its backend lacks,
// ops/device_backend.h; docs/cuda.md): refused before any work, one message
// naming the feature. The CPU and the test device run everything.
void check_device(const TrainConfig& t, const ModelConfig& m) {
  if (t.training.device != Device::CUDA) return;
  auto refuse = [](bool used, std::string_view what) {
    PX_CHECK(!used, "--device cuda: {} does not run on the GPU yet (docs/cuda.md)", what);
  };
  refuse(m.lora.qlora, "QLoRA (the NF4 linear)");
  refuse(m.attn_dropout > 0.0, "attention dropout");
  refuse(m.sliding_window > 0 && m.sliding_window < t.training.seq_len,
         fmt::format("sliding-window attention (window {} < sequence length {})",
                     m.sliding_window, t.training.seq_len));
}

}  // namespace

void TrainConfig::validate(const ModelConfig& m, int world_size) const {
  m.validate();
  data.validate();
  training.validate();
  optimizer.validate();
  lr_schedule.validate();
  parallelism.validate();
  checkpoint.validate();
  // Under LoRA a checkpoint holds only the adapters: --init-from names the frozen base.
  PX_CHECK(checkpoint.load_dir.empty() || checkpoint.init_from.empty() || m.lora.enabled(),
           "give --load (a checkpoint) or --init-from (a Hugging Face model), not both");
  precision.validate();
  logging.validate();
  resilience.validate();

  const ParallelismConfig& par = parallelism;
  const TrainingConfig& tr = training;
  PX_CHECK(!m.uses_learned_positions() || tr.seq_len <= m.max_positions,
           "seq_len ({}) exceeds the model's max_positions ({})", tr.seq_len, m.max_positions);
  // dp's own values and the batch against dp and the world size.
  validate_dp_layout(par.dp, world_size > 0 ? world_size : par.world_size(), tr.global_batch_size,
                     tr.micro_batch_size, par.tp, par.pp, par.cp);
  check_tp_divides(m, par.tp);
  PX_CHECK(!data.docs.any() || data.docs.eod < m.vocab_size,
           "packed documents: the end-of-document token (--eod-token {}) is outside the "
           "vocabulary ({})",
           data.docs.eod, m.vocab_size);
  PX_CHECK(!par.sequence_parallel || (tr.micro_batch_size * tr.seq_len) % par.tp == 0,
           "sequence parallel: micro batch size ({}) x seq_len ({}) is not divisible by tp ({})",
           tr.micro_batch_size, tr.seq_len, par.tp);
  if (par.cp > 1) {
    check_cp_divides(tr.seq_len, par.cp);
    const int u = ulysses_degree_for(cp_comm_from_name(par.cp_comm), par.cp, par.ulysses_degree);
    check_ulysses_heads(m.n_heads / par.tp, m.n_kv_heads * kv_replicas(m, par.tp) / par.tp, u);
    PX_CHECK(!par.sequence_parallel || (tr.micro_batch_size * tr.seq_len / par.cp) % par.tp == 0,
             "sequence parallel under cp {}: micro batch size ({}) x seq_len / cp ({}) is not "
             "divisible by tp ({})",
             par.cp, tr.micro_batch_size, tr.seq_len / par.cp, par.tp);
  }
  validate_pipeline(*this, m);
  if (par.ep > 1) {  // before any allocation: one message each (docs/moe.md)
    PX_CHECK(m.moe.enabled(), "expert parallelism (--ep {}) needs an MoE model (--num-experts)",
             par.ep);
    PX_CHECK(m.moe.num_experts % par.ep == 0, "num_experts ({}) is not divisible by ep ({})",
             m.moe.num_experts, par.ep);
    PX_CHECK(par.dp.mode == DpMode::AllReduce,
             "expert parallelism (--ep {}) does not run with the parameter server (--dp-mode "
             "ps): use --dp-mode allreduce (DDP or ZeRO-1/2/3)",
             par.ep);
    PX_CHECK(par.dp.zero == 0 || optimizer.kind != OptimizerKind::Muon,
             "expert parallelism (--ep {}) with ZeRO needs an element-wise optimizer, not "
             "muon (its shards are scattered spans)",
             par.ep);
  }
  // Expert tensor parallelism (docs/moe.md): experts whole on every tp rank
  // (1) or split over the whole tp group (tp); other sizes are not built.
  PX_CHECK(par.expert_tp == 1 || par.expert_tp == par.tp,
           "--expert-tp {}: experts split over tensor-parallel ranks are built for --expert-tp 1 "
           "(experts whole on every tp rank) or --expert-tp equal to --tp ({}) only",
           par.expert_tp, par.tp);
  if (par.expert_tp > 1) {
    PX_CHECK(m.moe.enabled(), "--expert-tp {} needs an MoE model (--num-experts)", par.expert_tp);
    const int64_t width = m.moe.expert_intermediate(m.intermediate);
    PX_CHECK(width % par.expert_tp == 0,
             "--expert-tp {}: the experts' width ({}) is not divisible by it", par.expert_tp,
             width);
    PX_CHECK(optimizer.kind != OptimizerKind::Muon,
             "--expert-tp {} with muon: muon would need each expert matrix gathered over tp; use "
             "an element-wise optimizer",
             par.expert_tp);
    PX_CHECK(par.dp.zero <= 2 && par.dp.mode == DpMode::AllReduce,
             "--expert-tp {} runs with DDP or ZeRO-1/2 only (--zero {})", par.expert_tp,
             par.dp.zero);
  }
  // MoE under cp: every cp rank routes whole sequences (docs/moe.md), so
  // capacity per sequence needs nothing here beyond cp's own checks.
  PX_CHECK(par.pp > 1 || (logging.trace_path.empty() && logging.timeline_path.empty()),
           "--trace and --timeline record the pipeline schedule and need --pp > 1");
  check_device(*this, m);
}

}  // namespace parallm
