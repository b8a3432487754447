#include "train/trainer.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

#include "base/rng.h"
#include "ops/host_runtime.h"
#include "plan/flops.h"

namespace parallm {
namespace {
// A nonzero dropout seed for one optimizer step (0 would mean "no dropout").
// Gradients are reduced over dp x cp: context-parallel ranks hold the same
// parameters and different tokens of the same samples.
DpOptions reduction_options(const TrainConfig& cfg, const Transformer& model) {
  DpOptions o = cfg.parallelism.dp;
  o.dp *= model.cp().size();
  return o;
}

// Tokens of the global batch [first, first + GB) that count in the loss:
// the normaliser of the global token mean. Every rank reads the whole batch
// (the loader can fill any sample), so the count is the same on every layout
// without a collective.
double counted_tokens(const DataLoader& data, int64_t first, int64_t GB, int64_t T,
                      const PackedDocs& docs) {
  std::vector<int32_t> in(T), tg(T);
  int64_t n = 0;
  for (int64_t s = 0; s < GB; ++s) {
    data.fill_window(first + s, in.data(), tg.data());
    n += loss_token_count(in.data(), tg.data(), T, docs);
  }
  return static_cast<double>(std::max<int64_t>(n, 1));
}

double blocked_ms(const CommByGroup& groups) {
  double ms = 0.0;
  for (const auto& [kind, g] : groups) ms += g.blocked_ms;
  return ms;
}

uint64_t dropout_seed(uint64_t seed, int64_t step) {
  const uint64_t k = stream_key(seed ^ mix64(static_cast<uint64_t>(step)), "dropout");
  return k == 0 ? 1 : k;
}
}  // namespace

Trainer::Trainer(Transformer& model, const TrainConfig& cfg, Allocator& alloc, double peak_flops,
                 comm::Communicator* dp_group, PipelineGroups pipe, comm::Communicator* edp_group)
    : model_(model),
      cfg_(cfg),
      alloc_(alloc),
      peak_flops_(peak_flops),
      flops_per_token_(training_flops_per_token(model.config(), cfg.training.seq_len)),
      hw_flops_per_token_(parallm_hardware_flops_per_token(model.config(), cfg.training.seq_len,
                                                           cfg.training.recompute)),
      train_data_(cfg.data.train, cfg.training.seq_len, cfg.training.seed, cfg.data.shuffle),
      dp_(make_data_parallel(model, dp_group, reduction_options(cfg, model), cfg.optimizer, alloc,
                             edp_group)),
      sched_(cfg.schedule()),
      comm_meter_(
          {{GroupKind::Dp, dp_group},
           {GroupKind::Tp, model.tp().comm},
           {GroupKind::Cp, model.cp().comm},
           {GroupKind::Cp, model.cp().ulysses != model.cp().comm ? model.cp().ulysses : nullptr},
           {GroupKind::Cp, model.cp().ring != model.cp().comm ? model.cp().ring : nullptr},
           {GroupKind::Pp, pipe.pp},
           {GroupKind::Embedding, pipe.embedding},
           {GroupKind::Ep, model.ep().comm},
           {GroupKind::Edp, edp_group}}) {
  cfg_.validate(model.config());
  dp_group_ = dp_group;
  pp_group_ = pipe.pp;
  dp_->set_expert_group(edp_group);
  if (cfg_.parallelism.pp > 1) {
    pipe_ = std::make_unique<PipelineStep>(model, cfg_, pipe);
    dp_->set_pipeline_group(pipe.pp);
  }
  PX_CHECK(cfg_.parallelism.tp == model.tp().size(),
           "the run asks for tp {} but the model was built for tp {}", cfg_.parallelism.tp,
           model.tp().size());
  train_data_.validate_vocab(model.config().vocab_size);
  if (!cfg_.data.val.empty()) {
    val_data_ = std::make_unique<DataLoader>(cfg_.data.val, cfg_.training.seq_len,
                                             cfg_.training.seed, false);
    val_data_->validate_vocab(model.config().vocab_size);
  }
  const PrecisionConfig& prec = cfg_.precision;
  if (prec.matmul != Precision::FP32)
    matmul_ = std::make_unique<MatmulPrecision>(prec.matmul, model.base_params(), alloc,
                                                !prec.emulate_lowp_gemm);
  if (prec.matmul == Precision::FP16) scaler_ = LossScaler(prec.loss_scale);
  model_.set_compute(matmul_.get(), cfg_.training.recompute);
  model_.set_packed_docs(cfg_.data.docs);
}

std::string Trainer::compute_summary() const {
  const PrecisionConfig& prec = cfg_.precision;
  std::string s = prec.matmul == Precision::FP32   ? "fp32"
                  : prec.matmul == Precision::BF16 ? "bf16 (fp32 master weights)"
                                                   : "fp16 (fp32 master weights)";
  s = "precision " + s + "; CPU ISA " + ops::host_isa_summary();
  if (alloc_.device() != Device::CPU)
    s += fmt::format("; model on the {} device", device_name(alloc_.device()));
  if (matmul_) s += "; GEMM: " + matmul_->gemm().backend();
  if (prec.matmul == Precision::FP16)
    s += fmt::format("; loss scale {} (window {}, hysteresis {}, min {})", scaler_.scale(),
                     prec.loss_scale.window, prec.loss_scale.hysteresis, prec.loss_scale.min_scale);
  else
    s += prec.skip_nonfinite ? "; on NaN: skip the step" : "; on NaN: stop";
  return s + "; recompute " + recompute_name(cfg_.training.recompute);
}

StepStats Trainer::train_step(int64_t step) {
  auto t0 = std::chrono::steady_clock::now();
  alloc_.reset_peaks();
  const int64_t B = cfg_.training.micro_batch_size, T = cfg_.training.seq_len;
  const int64_t GB = cfg_.training.global_batch_size;
  const uint64_t seed = cfg_.training.seed;
  const int64_t accum = cfg_.grad_accum_steps();
  const double tokens = static_cast<double>(GB * T);
  // The loss is the mean over the tokens that count (all but the EOD inputs
  // under --eod-mask-loss), whatever the layout.
  const double counted = cfg_.data.docs.eod_mask_loss
                             ? counted_tokens(train_data_, step * GB, GB, T, cfg_.data.docs)
                             : tokens;
  std::vector<int32_t> in(B * T), tg(B * T);
  // This rank's rows of the global batch: a contiguous block of samples
  // (the reduction group is dp x cp with cp fastest; cp ranks share rows).
  const int cp = model_.cp().size();
  const int64_t first = step * GB + (dp_->dp_rank() / cp) * (GB / (dp_->dp_size() / cp));

  comm_meter_.start();
  if (matmul_) matmul_->invalidate();  // 16-bit weight copies: once per step, after the update
  const bool fp16 = cfg_.precision.matmul == Precision::FP16;
  const double loss_scale = fp16 ? scaler_.scale() : 1.0;
  dp_->begin_step();
  double loss_sum = 0.0;
  PipelineStepStats ps;
  if (pipe_) {  // every micro-batch of the step goes through the schedule at once
    std::vector<int32_t> ins(accum * B * T), tgs(accum * B * T);
    std::vector<Transformer::StageBatch> mbs;
    for (int64_t m = 0; m < accum; ++m) {
      train_data_.fill_batch(first + m * B, B, ins.data() + m * B * T, tgs.data() + m * B * T);
      mbs.push_back({ins.data() + m * B * T, tgs.data() + m * B * T, B, T, loss_scale / counted,
                     DropoutKey{dropout_seed(seed, step), first + m * B - step * GB}});
    }
    // Armed, but backward reports no segments: the dp reduction starts in
    // finish_step, after the embedding group has summed the tied table.
    dp_->begin_micro_batch(true);
    ps = pipe_->run(mbs, step);
    loss_sum = ps.loss_sum;
  }
  for (int64_t m = 0; m < accum && !pipe_; ++m) {
    train_data_.fill_batch(first + m * B, B, in.data(), tg.data());
    dp_->begin_micro_batch(m + 1 == accum);
    // Dropout key: per step; the global sample number tells micro-batches and
    // dp ranks apart, so the masks do not depend on the layout.
    const DropoutKey drop{dropout_seed(seed, step), first + m * B - step * GB};
    loss_sum += model_.forward_backward(in.data(), tg.data(), B, T, loss_scale / counted, drop).sum;
  }
  // A planted slow rank (plant_slow_compute): the whole step's compute
  // stretched, in one sleep before the gradient reduction, so the other
  // ranks wait for it there as for a slow device.
  const double slept_ms = slow_fraction_ * unstretched_compute_ms_;
  if (slept_ms > 0)
    std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(slept_ms));
  StepStats s;
  s.step = step;
  s.lr = sched_.at(updates_);
  DpStepResult r;
  try {
    r = dp_->finish_step(loss_sum, s.lr, cfg_.training.clip_grad,
                         StepGuard{1.0 / loss_scale, fp16 || cfg_.precision.skip_nonfinite});
  } catch (const Error& e) {
    PX_FAIL("step {}: {}", step, e.what());
  }
  s.loss_scale = loss_scale;
  s.skipped = r.skipped;
  s.nonfinite = r.nonfinite;
  if (fp16) scaler_.update(r.skipped);
  if (!r.skipped) ++updates_;
  s.loss = r.loss_sum / counted;
  s.grad_norm = r.grad_norm;
  if (model_.has_moe()) moe_metrics(s);
  s.bubble_fraction = ps.bubble_fraction;
  s.bubble_fraction_replayed = ps.bubble_fraction_replayed;
  s.stage_peak_activation_bytes = ps.stage_peak_activation_bytes;
  s.comm_by_group = comm_meter_.since_start();
  const auto group = [&](const char* kind) {
    const auto it = s.comm_by_group.find(kind);
    return it == s.comm_by_group.end() ? GroupComm{} : it->second;
  };
  s.exposed_comm_ms = group("dp").blocked_ms;
  s.comm_bytes = group("dp").bytes;
  s.tp_comm_bytes = group("tp").bytes;
  s.sp_comm_bytes = group("sp").bytes;
  s.tp_comm_ms = group("tp").blocked_ms + group("sp").blocked_ms;
  s.cp_comm_ms = group("cp").blocked_ms;
  s.cp_comm_bytes = group("cp").bytes;
  s.cp_peer_wait_ms = group("cp").peer_wait_ms;
  s.cp_poll_ms = group("cp").poll_ms;
  s.cp_send_wait_ms = group("cp").send_ms;
  s.ep_comm_ms = group("ep").blocked_ms;
  s.comm_ms = blocked_ms(s.comm_by_group);
  for (const auto& [kind, g] : s.comm_by_group) s.peer_wait_ms += g.peer_wait_ms;

  s.step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  unstretched_compute_ms_ = s.step_seconds * 1e3 - s.comm_ms - slept_ms;
  s.tokens_per_s = tokens / s.step_seconds;
  s.tflops = s.tokens_per_s * flops_per_token_ / 1e12;
  // peak_flops_ is one rank's; the step's tokens ran on dp x cp x tp x pp ranks.
  const int ranks = dp_->dp_size() * model_.tp().size() * cfg_.parallelism.pp;
  const double hw_per_rank = s.tokens_per_s * hw_flops_per_token_ / ranks;
  if (peak_flops_ > 0 && hw_per_rank > peak_flops_) {
    peak_flops_ = hw_per_rank;
    s.peak_raised = true;
  }
  s.peak_flops = peak_flops_;
  s.mfu = flops_utilisation(s.tokens_per_s, flops_per_token_, peak_flops_, ranks);
  s.hfu = flops_utilisation(s.tokens_per_s, hw_flops_per_token_, peak_flops_, ranks);
  return s;
}

void Trainer::moe_metrics(StepStats& s) {
  const MoeStats mine = model_.take_moe_stats();
  const MoeConfig& m = model_.config().moe;
  ExpertBias& bias = model_.expert_bias();
  const auto E = static_cast<size_t>(m.num_experts);
  std::vector<double> v = mine.flat(E, bias.values().size());
  for (comm::Communicator* g : {dp_group_, pp_group_})
    if (g != nullptr && g->size() > 1)
      g->all_reduce(v.data(), v.size(), DType::F64, comm::ReduceOp::Sum);
  const MoeStats all = MoeStats::from_flat(v, E);
  // The aux-loss-free bias moves with the step's global loads (every rank
  // sums the same integer counts, so every rank and layout moves it alike);
  // a skipped step moves it no more than the parameters.
  if (bias.enabled() && !s.skipped) bias.update(all.layer_load, m.bias_update_rate);
  s.moe = true;
  s.moe_aux_loss = m.aux_loss_coeff * all.aux_sum / std::max(all.sequences, 1.0);
  s.moe_z_loss = m.z_loss_coeff * all.z_sum / std::max(all.tokens, 1.0);
  s.moe_dropped = all.dropped / std::max(all.assignments, 1.0);
  double mx = 0.0;
  for (double l : all.expert_load) mx = std::max(mx, l);
  s.moe_max_load = mx / std::max(all.assignments / static_cast<double>(m.num_experts), 1e-300);
  s.moe_expert_load = all.expert_load;
  s.moe_ep_max_load.clear();
  for (size_t e = 2; e < all.ep_max_load_sum.size() && all.dispatches > 0; ++e)
    if (E % e == 0)
      s.moe_ep_max_load[static_cast<int>(e)] = all.ep_max_load_sum[e] / all.dispatches;
}

double Trainer::evaluate() {
  if (!val_data_) return NAN;
  // verify's tap records training passes only: validation batches would
  // come under the same (layer, op, sample) keys as the training ones.
  struct TapOff {
    Transformer& m;
    OpTap* tap;
    TapOff(Transformer& model, OpTap* t) : m(model), tap(t) {
      m.set_verify_hooks(nullptr, m.fault_hooks());
    }
    ~TapOff() { m.set_verify_hooks(tap, m.fault_hooks()); }
    TapOff(const TapOff&) = delete;
    TapOff& operator=(const TapOff&) = delete;
  } tap_off(model_, op_tap_);
  const int64_t B = cfg_.training.micro_batch_size, T = cfg_.training.seq_len;
  const int64_t batches = cfg_.logging.eval_batches;
  std::vector<int32_t> in(B * T), tg(B * T);
  if (matmul_) matmul_->invalidate();  // the weights may have changed since the last copy
  LossSum total;
  if (pipe_) total = pipe_->evaluate(*val_data_, batches, B, T);
  for (int64_t i = 0; i < batches && !pipe_; ++i) {
    val_data_->fill_batch(i * B, B, in.data(), tg.data());
    LossSum l = model_.forward_loss(in.data(), tg.data(), B, T);
    total.sum += l.sum;
    total.count += l.count;
  }
  return total.sum / static_cast<double>(std::max<int64_t>(total.count, 1));
}

nlohmann::json step_record(const StepStats& s) {
  return {{"step", s.step},
          {"loss", s.loss},
          {"lr", s.lr},
          {"grad_norm", s.grad_norm},
          {"step_ms", s.step_seconds * 1e3},
          {"tokens_per_s", s.tokens_per_s},
          {"tflops", s.tflops},
          {"mfu", s.mfu},
          {"hfu", s.hfu},
          {"peak_tflops", s.peak_flops / 1e12}};
}

void Trainer::run(const std::function<void(const StepStats&)>& on_step,
                  const std::function<bool(int64_t completed)>& after_step) {
  // Opened here, not at construction: a resumed run knows its first step now.
  const LoggingConfig& lg = cfg_.logging;
  const int64_t steps = cfg_.training.steps;
  if (!lg.metrics_path.empty() && logging_rank() && !metrics_.enabled())
    metrics_ = MetricsWriter(lg.metrics_path, start_step_);
  if (!lg.tensorboard_dir.empty() && logging_rank() && !tensorboard_.enabled())
    tensorboard_ = TensorBoardWriter(lg.tensorboard_dir, start_step_);
  for (int64_t step = start_step_; step < steps; ++step) {
    StepStats s = train_step(step);
    const std::vector<RankTimes> ranks = rank_times_ ? rank_times_(s) : std::vector<RankTimes>{};
    // dp, tp and sp always (README), other groups when the step used them.
    nlohmann::json bytes = {{"dp", s.comm_bytes}, {"tp", s.tp_comm_bytes}, {"sp", s.sp_comm_bytes}};
    nlohmann::json ms = nlohmann::json::object();
    for (const auto& [kind, g] : s.comm_by_group) {
      bytes[kind] = g.bytes;
      ms[kind] = g.blocked_ms;
    }
    nlohmann::json rec = step_record(s);
    rec.update({{"loss_scale", s.loss_scale},
                {"skipped", s.skipped},
                {"exposed_comm_ms", s.exposed_comm_ms},
                {"tp_comm_ms", s.tp_comm_ms},
                {"cp_comm_ms", s.cp_comm_ms},
                {"cp_peer_wait_ms", s.cp_peer_wait_ms},
                {"cp_send_wait_ms", s.cp_send_wait_ms},
                {"cp_poll_ms", s.cp_poll_ms},
                {"ep_comm_ms", s.ep_comm_ms},
                {"comm_bytes", s.comm_bytes},
                {"comm_bytes_by_group", bytes},
                {"comm_ms_by_group", ms},
                {"memory", memory_json(alloc_.stats())}});
    if (pipe_)
      rec["pipeline"] = {{"schedule", cfg_.parallelism.schedule},
                         {"pp", cfg_.parallelism.pp},
                         {"virtual_stages", pipe_->chunks()},
                         {"micro_batches", cfg_.grad_accum_steps()},
                         {"bubble_fraction", s.bubble_fraction},
                         {"bubble_fraction_replayed", s.bubble_fraction_replayed},
                         {"peak_activation_bytes", s.stage_peak_activation_bytes}};
    if (!ranks.empty()) rec["ranks"] = ranks_json(ranks);
    if (s.skipped) rec["nonfinite"] = s.nonfinite;
    if (s.moe)
      rec["moe"] = {{"aux_loss", s.moe_aux_loss},
                    {"z_loss", s.moe_z_loss},
                    {"max_load", s.moe_max_load},
                    {"dropped_fraction", s.moe_dropped},
                    {"expert_load", s.moe_expert_load}};
    if (s.moe && !s.moe_ep_max_load.empty()) {
      nlohmann::json ep_load;
      for (const auto& [e, f] : s.moe_ep_max_load) ep_load[std::to_string(e)] = f;
      rec["moe"]["ep_max_load"] = ep_load;
    }
    bool last = step + 1 == steps;
    if (val_data_ && ((lg.eval_interval > 0 && (step + 1) % lg.eval_interval == 0) || last))
      rec["val_loss"] = evaluate();
    metrics_.write(rec);
    tensorboard_.write(rec);
    if (on_step) on_step(s);
    if (after_step && after_step(step + 1)) break;
  }
}

}  // namespace parallm
