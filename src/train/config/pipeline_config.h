// The pipeline a run describes: its schedule, how its layers split over
// stages and virtual stages, the checks a run with --pp makes before
// anything is allocated, and the layers each stage holds. Pure functions of
// the run and the model, so the configuration layer checks a run whole.
#pragma once
#include "model/model_stage.h"
#include "parallel/pipeline/schedule.h"
#include "parallel/pipeline/stage_partition.h"
#include "train/config/train_config.h"

namespace parallm {

// The pipeline constraints that need the model and the batch, with values:
// layers vs pp x V (or --pp-layers), the schedule's micro-batch rules (the
// values alone: ParallelismConfig::validate).
void validate_pipeline(const TrainConfig& t, const ModelConfig& m);
pipeline::ScheduleSpec pipeline_spec(const TrainConfig& t);
pipeline::StagePartition pipeline_partition(const TrainConfig& t, const ModelConfig& m);
// The layers stage `pp_rank` holds.
ModelStage pipeline_stage(const TrainConfig& t, const ModelConfig& m, int pp_rank);

}  // namespace parallm
