// PipelineRuntime: executes this stage's action list of any schedule (one
// runtime for GPipe, 1F1B, interleaved and zero-bubble) on a stage model.
// Transfers are non-blocking point-to-point calls on the pp group: a receive
// is posted where the list has it and waited on only when the compute that
// needs it starts; a send is started after its compute and completed later
// (blocking sends deadlock 1F1B, see schedule.h). Messages carry tag
// (micro-batch * V + receiving chunk) * 2 + (gradient ? 1 : 0), so every
// (kind, micro-batch, chunk) pair of a step is unique between two stages.
// Records a timeline (compute, send, receive wait) per step.
#pragma once
#include <functional>
#include <vector>

#include "comm/communicator.h"
#include "model/contract/model_contract.h"
#include "parallel/pipeline/schedule.h"
#include "trace/timeline.h"

namespace parallm::pipeline {

struct StepRecord {
  LossSum loss;                      // the head chunk's (last stage), else zero
  std::vector<trace::Event> events;  // rank = this stage; times in us (steady clock)
  double compute_us = 0;             // time in compute actions
  double start_us = 0, end_us = 0;   // first action start, last action end
};

class PipelineRuntime {
 public:
  // pp: the pipeline group (rank = stage), null when the schedule has one
  // stage. The model must hold this stage's chunks (V of them).
  PipelineRuntime(StagedModel& model, comm::Communicator* pp, Schedule schedule);
  const Schedule& schedule() const { return schedule_; }
  int stage() const { return stage_; }
  // Runs one step: batch(m) gives micro-batch m's tokens (valid during the
  // step). Gradients accumulate into the model's parameters.
  StepRecord run_step(const std::function<StagedModel::StageBatch(int)>& batch);
  // Evaluation: forwards only, micro-batch after micro-batch through every
  // virtual stage (no schedule needed); the loss sum on the last stage.
  LossSum run_forward_only(const std::vector<StagedModel::StageBatch>& batches);

 private:
  StagedModel& model_;
  comm::Communicator* pp_;
  Schedule schedule_;
  int stage_ = 0;
};

// Steady-clock microseconds (comparable between processes of one host).
double now_us();

}  // namespace parallm::pipeline
