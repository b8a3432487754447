// The pipeline's shape from the run: schedule, layer partition, checks and
// the stage a rank builds.
#include "train/config/pipeline_config.h"

namespace parallm {

pipeline::ScheduleSpec pipeline_spec(const TrainConfig& t) {
  const ParallelismConfig& p = t.parallelism;
  const pipeline::ScheduleKind kind = pipeline::schedule_kind_from_name(p.schedule);
  // DualPipeV's two chunks per stage are the schedule's, not a setting.
  const bool v_shape = kind == pipeline::ScheduleKind::DualPipeV && p.virtual_stages == 1;
  return pipeline::ScheduleSpec{.kind = kind,
                                .pp = p.pp,
                                .micro_batches = static_cast<int>(t.grad_accum_steps()),
                                .virtual_stages = v_shape ? 2 : p.virtual_stages};
}

pipeline::StagePartition pipeline_partition(const TrainConfig& t, const ModelConfig& m) {
  const ParallelismConfig& p = t.parallelism;
  std::vector<int> counts;
  if (!p.pp_layers.empty()) counts = pipeline::parse_layer_counts(p.pp_layers);
  const pipeline::ScheduleSpec spec = pipeline_spec(t);
  return pipeline::partition_layers(static_cast<int>(m.n_layers), p.pp, spec.virtual_stages, counts,
                                    pipeline::schedule_placement(spec.kind));
}

void validate_pipeline(const TrainConfig& t, const ModelConfig& m) {
  if (t.parallelism.pp == 1) return;
  pipeline::validate_spec(pipeline_spec(t));  // names the schedule's own rules
  pipeline_partition(t, m);                   // layers vs pp x V, --pp-layers sums
}

ModelStage pipeline_stage(const TrainConfig& t, const ModelConfig& m, int pp_rank) {
  ModelStage s;
  const int pp = t.parallelism.pp;
  if (pp == 1) return s;
  const pipeline::StagePartition p = pipeline_partition(t, m);
  s.embedding = p.chunks.front().stage == pp_rank;
  s.head = p.chunks.back().stage == pp_rank;
  for (int c = 0; c < p.virtual_stages; ++c) {
    const pipeline::ChunkLayers& cl = p.at(pp_rank, c);
    s.chunks.push_back({cl.first_layer, cl.num_layers});
  }
  return s;
}

}  // namespace parallm
