// The pipeline's shape from the run: schedule, layer partition, checks and
// the stage a rank builds.
#include "train/config/pipeline_config.h"

namespace parallm {

pipeline::ScheduleSpec pipeline_spec(const TrainConfig& t) {
  const ParallelismConfig& p = t.parallelism;
  return pipeline::ScheduleSpec{.kind = pipeline::schedule_kind_from_name(p.schedule),
                                .pp = p.pp,
                                .micro_batches = static_cast<int>(t.grad_accum_steps()),
                                .virtual_stages = p.virtual_stages};
}

pipeline::StagePartition pipeline_partition(const TrainConfig& t, const ModelConfig& m) {
  const ParallelismConfig& p = t.parallelism;
  std::vector<int> counts;
  if (!p.pp_layers.empty()) counts = pipeline::parse_layer_counts(p.pp_layers);
  return pipeline::partition_layers(static_cast<int>(m.n_layers), p.pp, p.virtual_stages, counts);
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
  s.embedding = pp_rank == 0;
  s.head = pp_rank == pp - 1;
  for (int c = 0; c < t.parallelism.virtual_stages; ++c) {
    const pipeline::ChunkLayers& cl = p.at(pp_rank, c);
    s.chunks.push_back({cl.first_layer, cl.num_layers});
  }
  return s;
}

}  // namespace parallm
