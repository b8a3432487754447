// HF export from checkpoints and from running jobs (see checkpoint_export.h).
#include "checkpoint/checkpoint_export.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "io/hf_model.h"
#include "io/peft_adapter.h"
#include "model/lora/lora_merge.h"
#include "parallel/tensor/gather_parameters.h"
#include "checkpoint/checkpoint_load.h"

namespace parallm {

namespace {
void merge_lora_into_base(Transformer& model) {
  merge_lora(model.params(), model.base_params(), model.config().lora.scale());
}
}  // namespace

ExportResult export_checkpoint_to_hf(const std::string& checkpoint, const std::string& out_dir,
                                     DType dtype, int64_t max_shard_bytes, bool merge_lora) {
  OpenedCheckpoint ck = open_checkpoint(checkpoint, nullptr);
  const LoraConfig& lora = ck.state.model.lora;
  PX_CHECK(!merge_lora || lora.enabled(), "--merge-lora: checkpoint '{}' has no LoRA adapters",
           ck.dir);
  Allocator alloc;
  Transformer model(ck.state.model, alloc);
  model.params().init_random(0);  // every element is overwritten below
  check_checkpoint_covers_model(ck, model.params(), ck.state.model);
  load_checkpoint_values(ck, model.params(), ck.state.model.vocab_size);
  if (lora.enabled() && !merge_lora) {
    save_peft_adapter(out_dir, model, ck.state.lora_base);
  } else if (lora.enabled()) {
    if (ck.state.lora_base.empty())  // trained on the seed's random base: rebuild it
      model.base_params().init_random(ck.state.seed);
    else
      load_hf_weights(ck.state.lora_base, model);
    merge_lora_into_base(model);
    save_hf_model(out_dir, model, dtype, max_shard_bytes);
  } else {
    save_hf_model(out_dir, model, dtype, max_shard_bytes);
  }
  return {ck.dir, ck.state.step, ck.state.model};
}

void save_hf_from_layout(const std::string& dir, Transformer& model, DataParallel& dp, DType dtype,
                         int world_rank, comm::Communicator* pp, const std::string& base_model) {
  auto save = [&](const Transformer& m) {
    if (m.config().lora.enabled())
      save_peft_adapter(dir, m, base_model);
    else
      save_hf_model(dir, m, dtype);
  };
  const bool staged = pp != nullptr && pp->size() > 1;
  const bool sharded = model.tp().active() || dp.options().zero >= 3 || model.ep().active();
  if (!sharded && !staged) {
    if (world_rank == 0) save(model);
    return;
  }
  // Full local values (ZeRO-3 gathers over dp), then each tensor over tp.
  std::vector<float> local = dp.full_parameters();
  const ParameterSet& ps = model.params();
  Allocator alloc;
  std::unique_ptr<Transformer> whole;
  if (world_rank == 0) whole = std::make_unique<Transformer>(model.config(), alloc);
  std::set<std::string> filled;  // on world rank 0: every parameter, from some stage
  auto put = [&](const std::string& name, const float* full, int64_t n) {
    const ParameterSet& wp = whole->params();
    const int j = wp.find(name);
    PX_CHECK(j >= 0, "parameter '{}' has no one-process counterpart", name);
    // A padded vocabulary differs in rows only: its first rows are the model's.
    PX_CHECK(wp.numel(j) <= n, "parameter '{}': {} gathered values for {} wanted", name, n,
             wp.numel(j));
    std::memcpy(wp.value({j}), full, static_cast<size_t>(wp.numel(j)) * sizeof(float));
    filled.insert(name);
  };
  // This stage's tensors, whole; a tied table's pipeline copy is left to the
  // first stage, which owns it.
  std::string names;  // '\n'-terminated, in the order of `values`
  std::vector<float> values;
  std::vector<int64_t> sizes;
  for (int i = 0; i < ps.size(); ++i) {
    std::vector<float> full = gather_tp_parameter(ps, i, local.data() + ps.offset(i), model.tp());
    if (ps.spec(i).expert && model.ep().active()) {  // experts split along dim 0 over ep
      std::vector<float> all(full.size() * model.ep().size());
      model.ep().comm->all_gather(full.data(), all.data(), full.size(), DType::F32);
      full = std::move(all);
    }
    if (ps.spec(i).pipeline_copy) continue;
    if (whole) {
      put(ps.spec(i).name, full.data(), static_cast<int64_t>(full.size()));
    } else if (staged) {
      names += ps.spec(i).name + "\n";
      sizes.push_back(static_cast<int64_t>(full.size()));
      values.insert(values.end(), full.begin(), full.end());
    }
  }
  // Under pp the other stages of world rank 0's pipeline (dp rank 0, tp
  // rank 0) send theirs to it: sizes, names, then the values.
  if (staged && dp.dp_rank() == 0 && model.tp().rank() == 0) {
    if (pp->rank() > 0) {
      int64_t head[2] = {static_cast<int64_t>(names.size()), static_cast<int64_t>(sizes.size())};
      pp->send(head, 2, DType::I64, 0);
      pp->send(names.data(), names.size(), DType::U8, 0);
      pp->send(sizes.data(), sizes.size(), DType::I64, 0);
      pp->send(values.data(), values.size(), DType::F32, 0);
    } else if (whole) {
      for (int s = 1; s < pp->size(); ++s) {
        int64_t head[2];
        pp->recv(head, 2, DType::I64, s);
        std::string got(static_cast<size_t>(head[0]), '\0');
        std::vector<int64_t> counts(static_cast<size_t>(head[1]));
        pp->recv(got.data(), got.size(), DType::U8, s);
        pp->recv(counts.data(), counts.size(), DType::I64, s);
        int64_t total = 0;
        for (int64_t c : counts) total += c;
        std::vector<float> data(static_cast<size_t>(total));
        pp->recv(data.data(), data.size(), DType::F32, s);
        size_t pos = 0;
        const float* p = data.data();
        for (int64_t c : counts) {
          const size_t nl = got.find('\n', pos);
          PX_CHECK(nl != std::string::npos, "stage {} sent {} tensors but fewer names", s,
                   counts.size());
          put(got.substr(pos, nl - pos), p, c);
          pos = nl + 1;
          p += c;
        }
      }
    }
  }
  if (!whole) return;
  PX_CHECK(static_cast<int>(filled.size()) == whole->params().size(),
           "--save-hf gathered {} of the model's {} parameters", filled.size(),
           whole->params().size());
  save(*whole);
}

}  // namespace parallm
