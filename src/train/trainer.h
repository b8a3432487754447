// The one-process training loop: global batch -> micro-batches (gradient
// accumulation) -> forward/backward -> global-norm clip -> the optimizer (--optimizer) with the
// warmup+cosine schedule -> metrics. The loss is normalised by the global
// token count so accumulation and data parallelism give the same gradients
// as one big batch. Under data parallelism each rank takes its own rows of
// the global batch and DataParallel reduces, updates and syncs; only the
// logging rank (dp rank 0, tp rank 0) writes metrics. Under context
// parallelism the cp ranks of a dp rank share its rows (each keeps its
// chunks of every sequence) and DataParallel spans dp x cp. Under --precision
// fp16 the loss is scaled (LossScaler) and a step with Inf/NaN gradients is
// skipped, as is any non-finite step under --on-nan skip; a skipped step
// advances the data but neither the optimizer nor the lr schedule (Megatron).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "data/data_loader.h"
#include "model/transformer.h"
#include "nn/matmul_precision.h"
#include "optim/loss_scaler.h"
#include "optim/lr_schedule.h"
#include "optim/optimizer.h"
#include "parallel/data/data_parallel.h"
#include "train/comm_meter.h"
#include "train/metrics.h"
#include "train/pipeline_step.h"
#include "train/tensorboard_writer.h"
#include "train/config/train_config.h"

namespace parallm {

struct StepStats {
  int64_t step = 0;
  double loss = 0.0;
  double lr = 0.0;
  double grad_norm = 0.0;
  double step_seconds = 0.0;
  double tokens_per_s = 0.0;
  double tflops = 0.0;
  double mfu = 0.0;
  double hfu = 0.0;  // counts recomputation FLOPs too (== mfu without recomputation)
  // The per-rank peak MFU and HFU are against, and whether this step raised
  // it: a step whose hardware FLOP/s per rank beat the peak proves the peak
  // too low (a disturbed measurement, a wrong --peak-tflops), so both stay <= 1.
  double peak_flops = 0.0;
  bool peak_raised = false;
  // Communication, as the communicators counted it (comm/comm_counters.h).
  double exposed_comm_ms = 0.0;  // dp: blocked on what compute did not hide
  int64_t comm_bytes = 0;        // payload this rank handed to dp ops
  int64_t tp_comm_bytes = 0;     // ... to tp ops other than all-gather/reduce-scatter
  int64_t sp_comm_bytes = 0;     // ... to tp all-gathers / reduce-scatters
  double tp_comm_ms = 0.0;       // blocked in tp and sp ops (blocking: all exposed)
  double cp_comm_ms = 0.0;       // blocked in cp ops: ring transfers attention did not hide
  int64_t cp_comm_bytes = 0;     // payload this rank handed to cp ops (ring, all-to-all)
  double cp_peer_wait_ms = 0.0;  // of cp_comm_ms, waiting for a ring peer to post (skew)
  double cp_send_wait_ms = 0.0;  // of cp_comm_ms, in ring sends (the receiver takes the bytes)
  double cp_poll_ms = 0.0;       // polling cp transfers from inside attention
  // Blocked in the MoE token all-to-alls (blocking, so all exposed: transfer
  // plus waiting for the slowest ep rank); expert-dp's reduction is "edp".
  double ep_comm_ms = 0.0;
  CommByGroup comm_by_group;  // every group the step used, by kind
  // Summed over comm_by_group: blocked in communication calls, and the part
  // known to be spent before a peer had posted. The rest of the step,
  // step_seconds - comm_ms, is this rank's compute (RankTimes, metrics.h).
  double comm_ms = 0.0;
  double peer_wait_ms = 0.0;
  // Pipeline (pp > 1), on the logging rank: measured bubble fraction of the
  // step and each stage's peak activation bytes (allocator, tag activation).
  double bubble_fraction = 0.0;           // wall clock
  double bubble_fraction_replayed = 0.0;  // measured pass durations, replayed (pipeline_step.h)
  std::vector<int64_t> stage_peak_activation_bytes;
  double loss_scale = 1.0;  // fp16: the loss scale this step ran with (else 1)
  bool skipped = false;     // non-finite loss/gradients: no update (fp16, --on-nan skip)
  std::string nonfinite;    // where the NaN/Inf was, when skipped
  // MoE models (docs/moe.md), over the global batch, averaged over the MoE
  // layers: the balancing losses' terms in the objective (coefficient x
  // mean), the busiest expert's assignments over the mean, the fraction of
  // assignments dropped by capacity, and each expert's assignments (summed
  // over layers). Not part of `loss`, which stays the language-model loss.
  // moe_ep_max_load: for each ep size e > 1 dividing E, the mean over
  // dispatches of the busiest ep rank's kept assignments over the mean
  // rank's (MoeStats::record_dispatch); `parallm plan --moe-load-from`
  // reads it.
  bool moe = false;
  double moe_aux_loss = 0.0, moe_z_loss = 0.0, moe_max_load = 0.0, moe_dropped = 0.0;
  std::vector<double> moe_expert_load;
  std::map<int, double> moe_ep_max_load;
};

// The JSONL fields every training job writes for a step: step, loss, lr,
// grad_norm, step_ms, tokens_per_s, tflops, mfu, hfu, peak_tflops.
nlohmann::json step_record(const StepStats& s);

class Trainer {
 public:
  // The model must already hold its initial parameters (the same on every
  // rank). peak_flops: one rank's peak FLOP/s (<= 0: no MFU). dp_group: the
  // data-parallel group when cfg.parallelism.dp.dp > 1, else null; under
  // context parallelism (model.cp().size() > 1) the dp x cp group
  // (GroupKind::DpCp), over which gradients and losses are summed.
  // pipe: the pp and embedding groups when cfg.parallelism.pp > 1 (the model is then
  // this rank's stage, see pipeline_stage()).
  // edp_group: the expert-data-parallel group under expert parallelism
  // (null: size 1).
  Trainer(Transformer& model, const TrainConfig& cfg, Allocator& alloc, double peak_flops,
          comm::Communicator* dp_group = nullptr, PipelineGroups pipe = {},
          comm::Communicator* edp_group = nullptr);
  StepStats train_step(int64_t step);
  // Mean loss over logging.eval_batches micro-batches of the validation files.
  double evaluate();
  // Runs steps [start_step, cfg.training.steps); on_step is called after each
  // (progress, logging), then after_step (checkpoints) with the number of
  // steps completed, which ends the run early by returning true.
  void run(const std::function<void(const StepStats&)>& on_step,
           const std::function<bool(int64_t completed)>& after_step = {});
  // Called on every rank after each step, before the metrics record is
  // written (a collective: StragglerMonitor's gather): every rank's times,
  // on the logging rank, become the record's "ranks"; elsewhere it returns
  // nothing.
  using RankTimesHook = std::function<std::vector<RankTimes>(const StepStats&)>;
  void set_rank_times(RankTimesHook hook) { rank_times_ = std::move(hook); }
  // A planted slow rank (plant_slow_rank, train/resilience/planted_slow_rank.h):
  // each step's compute is stretched by `fraction` (0: off).
  void plant_slow_compute(double fraction) { slow_fraction_ = fraction; }
  // A resumed run continues at `step` (data position, dropout keys and the
  // lr schedule are all functions of the step).
  void set_start_step(int64_t step) { start_step_ = step; }
  // `parallm verify`'s tap on the model (null: none): validation runs with it
  // detached, so the dumps hold training passes only.
  void set_op_tap(OpTap* tap) { op_tap_ = tap; }
  // A resumed run: the schedule's clock (updates so far; fewer than steps
  // when fp16 skipped some) and the fp16 loss scaler continue where the
  // checkpoint left them.
  void restore_progress(int64_t updates, const LossScalerState& scaler) {
    updates_ = updates;
    if (cfg_.precision.matmul == Precision::FP16) scaler_.restore(scaler);
  }
  // This rank's optimizer (null on a parameter-server worker).
  const Optimizer* optimizer() const { return dp_->optimizer(); }
  const DataParallel& data_parallel() const { return *dp_; }
  DataParallel& data_parallel() { return *dp_; }
  bool logging_rank() const {
    return dp_->dp_rank() == 0 && model_.tp().rank() == 0 && (!pipe_ || pipe_->stage() == 0);
  }
  const PipelineStep* pipeline() const { return pipe_.get(); }
  // One line for the job's banner: precision, GEMM backend, loss scaling, recomputation.
  std::string compute_summary() const;
  const LossScaler& loss_scaler() const { return scaler_; }
  // Optimizer updates so far (steps minus skipped steps): the schedule's clock.
  int64_t updates() const { return updates_; }

 private:
  Transformer& model_;
  OpTap* op_tap_ = nullptr;
  TrainConfig cfg_;
  Allocator& alloc_;
  double peak_flops_;
  double flops_per_token_;     // model FLOPs (MFU numerator)
  double hw_flops_per_token_;  // model + recomputation FLOPs (HFU numerator)
  DataLoader train_data_;
  std::unique_ptr<DataLoader> val_data_;
  std::unique_ptr<DataParallel> dp_;
  std::unique_ptr<PipelineStep> pipe_;
  std::unique_ptr<MatmulPrecision> matmul_;  // bf16/fp16 GEMMs (null under fp32)
  LossScaler scaler_;                        // fp16 only
  int64_t updates_ = 0;
  LrSchedule sched_;
  MetricsWriter metrics_;
  TensorBoardWriter tensorboard_;
  CommMeter comm_meter_;
  int64_t start_step_ = 0;
  comm::Communicator* dp_group_ = nullptr;
  comm::Communicator* pp_group_ = nullptr;
  RankTimesHook rank_times_;
  double slow_fraction_ = 0.0;
  // The last step's compute without the planted sleep: the next sleep is
  // slow_fraction_ x this (the current step's is not known before its
  // reduction, where the sleep must come; the first step is not slowed).
  double unstretched_compute_ms_ = 0.0;
  // Collective over dp (and pp): the step's MoE statistics into s.
  void moe_metrics(StepStats& s);
};

}  // namespace parallm
