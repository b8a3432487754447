// One pipelined training step (the checks and stages: train/config/pipeline_config.h).
#include "train/pipeline_step.h"

#include <algorithm>

#include "parallel/pipeline/simulate.h"

#include "base/error.h"

namespace parallm {

PipelineStep::PipelineStep(Transformer& model, const TrainConfig& t, PipelineGroups groups)
    : model_(model), groups_(groups), runtime_(model, groups.pp, make_schedule(pipeline_spec(t))) {
  const ModelStage& s = model.stage();
  // (Under LoRA the table is frozen: no gradient to sum. A stage holding
  // both ends, DualPipeV's stage 0, holds one table, as one process does.)
  if (model.config().tie_embeddings && !model.config().lora.enabled() && t.parallelism.pp > 1 &&
      s.embedding != s.head) {
    table_ = model.params().find("embed.weight");
    PX_CHECK(table_ >= 0 && groups.embedding != nullptr && groups.embedding->size() == 2,
             "stage {} holds the tied token table but has no two-rank embedding group", stage());
  }
}

double PipelineStep::replayed_bubble(const pipeline::StepRecord& rec) const {
  // Every stage's pass durations by kind, gathered to stage 0; the median of
  // each kind over all stages stands for that pass on every stage.
  constexpr int kKinds = 4;
  const trace::EventKind kinds[kKinds] = {trace::EventKind::Forward, trace::EventKind::Backward,
                                          trace::EventKind::BackwardInput,
                                          trace::EventKind::BackwardWeight};
  std::vector<double> mine(kKinds * kMaxPasses, -1.0);  // -1: no sample
  int count[kKinds] = {};
  for (const trace::Event& e : rec.events)
    for (int k = 0; k < kKinds; ++k)
      if (e.kind == kinds[k] && count[k] < kMaxPasses)
        mine[k * kMaxPasses + count[k]++] = e.end_us - e.start_us;
  const int n = stages();
  std::vector<double> all(mine.size() * static_cast<size_t>(n));
  if (groups_.pp)
    groups_.pp->gather(mine.data(), all.data(), mine.size(), DType::F64, 0);
  else
    all = mine;
  if (stage() != 0) return 0.0;
  double med[kKinds] = {};
  for (int k = 0; k < kKinds; ++k) {
    std::vector<double> d;
    for (int s = 0; s < n; ++s)
      for (int i = 0; i < kMaxPasses; ++i)
        if (const double v = all[(s * kKinds + k) * kMaxPasses + i]; v >= 0) d.push_back(v);
    if (d.empty()) continue;
    std::nth_element(d.begin(), d.begin() + d.size() / 2, d.end());
    med[k] = d[d.size() / 2];
  }
  pipeline::CostModel costs;
  costs.per_action = [&](int, const pipeline::Action& a) {
    switch (a.kind) {
      case pipeline::ActionKind::Forward:
        return med[0];
      case pipeline::ActionKind::Backward:
        return med[1];
      case pipeline::ActionKind::BackwardInput:
        return med[2];
      case pipeline::ActionKind::BackwardWeight:
        return med[3];
      default:
        return 0.0;
    }
  };
  return pipeline::simulate(runtime_.schedule(), costs).bubble_fraction;
}

PipelineStepStats PipelineStep::run(const std::vector<Transformer::StageBatch>& batches,
                                    int64_t step) {
  PX_CHECK(static_cast<int>(batches.size()) == runtime_.schedule().spec.micro_batches,
           "the step has {} micro-batches but the schedule {}", batches.size(),
           runtime_.schedule().spec.micro_batches);
  if (groups_.pp) groups_.pp->barrier();  // stages start the step together (timeline origin)
  pipeline::StepRecord rec = runtime_.run_step([&](int m) { return batches[m]; });
  for (const trace::Event& e : rec.events) {
    events_.push_back(e);
    event_steps_.push_back(step);
  }
  // Megatron's embedding group: the first stage's table gradient (input
  // side) plus the last stage's (head side), on both, before dp and the norm.
  if (table_ >= 0) {
    const ParameterSet& ps = model_.params();
    groups_.embedding->all_reduce(ps.grad(ParamRef{table_}), static_cast<size_t>(ps.numel(table_)),
                                  DType::F32, comm::ReduceOp::Sum);
  }
  PipelineStepStats out;
  out.loss_sum = rec.loss.sum;
  const int n = stages();
  double mine[4] = {rec.compute_us, rec.start_us, rec.end_us,
                    static_cast<double>(model_.allocator().peak(MemTag::Activation))};
  std::vector<double> all(4 * static_cast<size_t>(n));
  if (groups_.pp)
    groups_.pp->gather(mine, all.data(), 4, DType::F64, 0);
  else
    std::copy(mine, mine + 4, all.begin());
  if (stage() == 0) {
    double lo = all[1], hi = all[2], busy = 0;
    for (int s = 0; s < n; ++s) {
      busy += all[4 * s];
      lo = std::min(lo, all[4 * s + 1]);
      hi = std::max(hi, all[4 * s + 2]);
      out.stage_busy_us.push_back(all[4 * s]);
      out.stage_peak_activation_bytes.push_back(static_cast<int64_t>(all[4 * s + 3]));
    }
    out.bubble_fraction = hi > lo ? 1.0 - busy / (n * (hi - lo)) : 0.0;
  }
  out.bubble_fraction_replayed = replayed_bubble(rec);
  return out;
}

LossSum PipelineStep::evaluate(DataLoader& data, int64_t batches, int64_t B, int64_t T) {
  std::vector<int32_t> ins(batches * B * T), tgs(batches * B * T);
  std::vector<Transformer::StageBatch> mbs;
  for (int64_t i = 0; i < batches; ++i) {
    data.fill_batch(i * B, B, ins.data() + i * B * T, tgs.data() + i * B * T);
    mbs.push_back({ins.data() + i * B * T, tgs.data() + i * B * T, B, T, 0.0, {}});
  }
  LossSum l = runtime_.run_forward_only(mbs);
  double sums[2] = {l.sum, static_cast<double>(l.count)};
  if (groups_.pp) groups_.pp->all_reduce(sums, 2, DType::F64, comm::ReduceOp::Sum);
  // Under context parallelism each cp rank's head saw its chunks only.
  if (model_.cp().active()) model_.cp().comm->all_reduce(sums, 2, DType::F64, comm::ReduceOp::Sum);
  return LossSum{sums[0], static_cast<int64_t>(sums[1])};
}

}  // namespace parallm
