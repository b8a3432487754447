// HF export from checkpoints and from running jobs (see checkpoint_export.h).
#include "train/checkpoint_export.h"

#include <algorithm>
#include <cstring>

#include "io/hf_model.h"
#include "parallel/tensor/gather_parameters.h"
#include "train/checkpoint_load.h"

namespace parallm {

ExportResult export_checkpoint_to_hf(const std::string& checkpoint, const std::string& out_dir,
                                     DType dtype, int64_t max_shard_bytes) {
  OpenedCheckpoint ck = open_checkpoint(checkpoint, nullptr);
  Allocator alloc;
  Transformer model(ck.state.model, alloc);
  model.params().init_random(0);  // every element is overwritten below
  check_checkpoint_covers_model(ck, model.params());
  load_checkpoint_values(ck, model.params(), ck.state.model.vocab_size);
  save_hf_model(out_dir, model, dtype, max_shard_bytes);
  return {ck.dir, ck.state.step, ck.state.model};
}

void save_hf_from_layout(const std::string& dir, Transformer& model, DataParallel& dp, DType dtype,
                         int world_rank) {
  const bool sharded = model.tp().active() || dp.options().zero >= 3;
  if (!sharded) {
    if (world_rank == 0) save_hf_model(dir, model, dtype);
    return;
  }
  // Full local values (ZeRO-3 gathers over dp), then each tensor over tp.
  std::vector<float> local = dp.full_parameters();
  const ParameterSet& ps = model.params();
  Allocator alloc;
  std::unique_ptr<Transformer> whole;
  if (world_rank == 0) whole = std::make_unique<Transformer>(model.config(), alloc);
  for (int i = 0; i < ps.size(); ++i) {
    std::vector<float> full = gather_tp_parameter(ps, i, local.data() + ps.offset(i), model.tp());
    if (!whole) continue;
    const ParameterSet& wp = whole->params();
    const int j = wp.find(ps.spec(i).name);
    PX_CHECK(j >= 0, "parameter '{}' has no one-process counterpart", ps.spec(i).name);
    // A padded vocabulary differs in rows only: its first rows are the model's.
    PX_CHECK(wp.numel(j) <= static_cast<int64_t>(full.size()),
             "parameter '{}': {} gathered values for {} wanted", ps.spec(i).name, full.size(),
             wp.numel(j));
    std::memcpy(wp.value({j}), full.data(), static_cast<size_t>(wp.numel(j)) * sizeof(float));
  }
  if (whole) save_hf_model(dir, *whole, dtype);
}

}  // namespace parallm
