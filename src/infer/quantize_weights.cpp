// quantize_weights (see quantize_weights.h).
#include "infer/quantize_weights.h"

#include <memory>

#include "base/error.h"
#include "io/gguf/quant_recipe.h"
#include "ops/quant.h"
#include "nn/op_buffers.h"

namespace parallm {

QuantizeReport quantize_weights(Transformer& model, const std::string& preset) {
  const QuantPreset p = quant_preset_from_name(preset);
  const ModelConfig& cfg = model.config();
  ParameterSet& ps = model.base_params();
  ps.freeze();
  QuantizeReport r;
  for (int i = 0; i < ps.size(); ++i) {
    const ParamSpec& sp = ps.spec(i);
    if (sp.shape.size() != 2) continue;
    const bool tied_table = cfg.tie_embeddings && sp.name == "embed.weight";
    const QuantTarget t{.name = sp.name,
                        .cols = sp.global_shape[1],
                        .n_layers = static_cast<int>(cfg.n_layers),
                        .fused_qkv = cfg.arch == Arch::GPT2,
                        .head = sp.name == "lm_head.weight" || tied_table};
    const std::optional<ops::QuantType> type = recipe_type(p, t);
    if (!type) continue;
    const int64_t be = ops::quant_traits(*type).block_elems;
    PX_CHECK(sp.shard_dim != 1 || (sp.shard_begin % be == 0 && sp.shape[1] % be == 0),
             "--quantize {}: '{}' is {} in blocks of {} values, but this rank holds its columns "
             "[{}, {}): choose a tp size that splits its {} columns into whole blocks",
             preset, sp.name, ops::quant_traits(*type).name, be, sp.shard_begin,
             sp.shard_begin + sp.shape[1], sp.global_shape[1]);
    const HostView<float> v(ps.stream(), ps.value(ParamRef{i}), ps.numel(i));
    auto q = std::make_shared<const ops::QuantWeight>(ops::QuantWeight::quantize(
        model.allocator(), *type, v.get(), sp.shape[0], sp.shape[1]));
    r.tensors += 1;
    r.values += ps.numel(i);
    r.bytes += q->stored_bytes();
    // A tied table keeps its f32 rows for the embedding's gather.
    ps.set_quant(i, std::move(q), tied_table);
  }
  ps.drop_nf4_values(model.allocator());
  return r;
}

}  // namespace parallm
