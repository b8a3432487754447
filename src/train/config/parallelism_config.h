// ParallelismConfig: the [parallelism] table: the layout of the rank grid
// (world = pp x dp x cp x tp; parallel/data/dp_options.h for dp and ZeRO,
// docs/tensor_parallel.md, docs/pipeline.md). validate() checks the pipeline
// values alone; dp's options and the sizes against the world and the batch
// are validate_dp_layout's, and how they meet the model TrainConfig::validate's.
#pragma once
#include <string>

#include "parallel/data/dp_options.h"

namespace parallm {

struct ParallelismConfig {
  DpOptions dp;                    // --dp, --zero, --dp-mode, --bucket-mb, --no-overlap
  int tp = 1;                      // --tp: tensor parallel size
  bool sequence_parallel = false;  // --sequence-parallel (matters with tp > 1)
  int pp = 1;                      // --pp: pipeline stages
  int ep = 1;                      // --ep: expert parallel size (divides dp; docs/moe.md)
  int expert_tp = 1;               // --expert-tp: experts' tp size (1 or tp: docs/moe.md)
  std::string schedule = "1f1b";   // --schedule gpipe|1f1b|interleaved|zb
  int virtual_stages = 1;          // --virtual-stages: model chunks per stage (interleaved)
  std::string pp_layers;           // --pp-layers 3,5,5,3: layers per virtual stage (empty: even)
  int cp = 1;                      // --cp: context parallel size (docs/context_parallel.md)
  std::string cp_comm = "ring";    // --cp-comm ring|a2a|a2a+ring
  int ulysses_degree = 0;          // --ulysses-degree U (a2a+ring only)

  int world_size() const { return pp * dp.dp * cp * tp; }
  // dp left at 1 becomes world_size / (tp x pp x cp) where that divides, as
  // Megatron and torchtitan infer it (`mpirun -np 4 parallm train --tp 2`
  // runs dp 2); a dp given (> 1), or a world the other sizes do not divide,
  // stays for validate_dp_layout to check. world_size <= 0: unknown, kept.
  void infer_dp(int world_size);
  void validate() const;
};

}  // namespace parallm
