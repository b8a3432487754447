// The pipeline-parallel part of a training step (the checks a run with --pp
// makes before anything is allocated and the stage each rank builds:
// train/config/pipeline_config.h): PipelineStep, which runs one step's micro-batches through the schedule's
// runtime, sums the tied token table's gradient over the embedding group
// (first + last stage, so both copies get the same update) and gathers
// per-stage measurements (bubble, peak activation bytes) to pp rank 0;
// evaluation runs forwards only through the stages.
// Invariant: with every stage's layers together, a step adds the same
// gradients as the one-process model on the same micro-batches.
#pragma once
#include <memory>
#include <vector>

#include "comm/communicator.h"
#include "data/data_loader.h"
#include "model/transformer.h"
#include "parallel/pipeline/pipeline_runtime.h"
#include "parallel/pipeline/stage_partition.h"
#include "train/config/pipeline_config.h"

namespace parallm {

struct PipelineGroups {
  comm::Communicator* pp = nullptr;         // rank = stage
  comm::Communicator* embedding = nullptr;  // first + last stage (null on middle stages)
};

struct PipelineStepStats {
  double loss_sum = 0;         // this stage's (the last stage's is the loss)
  double bubble_fraction = 0;  // pp rank 0 only: 1 - busy / (pp x span)
  // pp rank 0 only: the schedule replayed with the median measured duration
  // of each pass kind (over all stages; up to kMaxPasses samples each per
  // stage), transfers free: the bubble the schedule's dependencies cause at
  // the measured F:B:W ratios, without idle time that no dependency explains
  // (OS descheduling on a loaded machine). For a balanced model; stable
  // where the wall clock is not. It assumes equal stages, so it cannot show
  // an imbalance (the wall-clock figure does).
  double bubble_fraction_replayed = 0;
  std::vector<double> stage_busy_us;                 // pp rank 0 only, per stage
  std::vector<int64_t> stage_peak_activation_bytes;  // pp rank 0 only, per stage
};

class PipelineStep {
 public:
  PipelineStep(Transformer& model, const TrainConfig& t, PipelineGroups groups);
  int stage() const { return runtime_.stage(); }
  int stages() const { return runtime_.schedule().spec.pp; }
  // Model chunks per stage as the schedule runs them (DualPipeV: 2).
  int chunks() const { return runtime_.schedule().spec.virtual_stages; }
  // batches[m]: micro-batch m (its token pointers valid during the call).
  // Call after the gradients are zeroed and before the optimizer.
  PipelineStepStats run(const std::vector<Transformer::StageBatch>& batches, int64_t step);
  // Loss over `batches` micro-batches of B x T from the start of data,
  // forwards only; the sum and count on every stage (summed over pp).
  LossSum evaluate(DataLoader& data, int64_t batches, int64_t B, int64_t T);
  // Every step's events on this rank (rank field: stage), and the step of each.
  const std::vector<trace::Event>& events() const { return events_; }
  const std::vector<int64_t>& event_steps() const { return event_steps_; }

 private:
  static constexpr int kMaxPasses = 64;
  double replayed_bubble(const pipeline::StepRecord& rec) const;
  Transformer& model_;
  PipelineGroups groups_;
  pipeline::PipelineRuntime runtime_;
  int table_ = -1;  // index of the tied token table on a first/last stage, else -1
  std::vector<trace::Event> events_;
  std::vector<int64_t> event_steps_;
};

}  // namespace parallm
