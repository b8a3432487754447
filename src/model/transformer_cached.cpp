// Transformer::forward_cached: the inference forward through a KV cache.
// The spans' tokens run as one row of N tokens through the same layer
// kernels as training (embedding, norms, linears, MLP) with nothing saved;
// only attention differs, reading each sequence's cached keys and values
// through its block table. So a
// prompt prefills in one pass and every later token costs one row. A
// pipeline stage runs the same path over its own layers: the first stage
// starts from the tokens, later ones from the hidden rows the stage before
// sent (a buffer of the model's device), and only the last stage computes
// logits, on the model's device.
#include "model/layers/rope_frequencies.h"
#include "model/transformer.h"
#include "ops/copy.h"

namespace parallm {

LayerRange Transformer::cached_layers() const {
  PX_CHECK(stage_.chunks.size() <= 1,
           "generation runs one model chunk per pipeline stage, this stage holds {}",
           stage_.chunks.size());
  if (stage_.chunks.empty()) return {0, static_cast<int>(cfg_.n_layers)};
  return stage_.chunks[0];
}

Tensor Transformer::forward_cached(const int32_t* tokens, const std::vector<PagedSpan>& spans,
                                   PagedKvCache& cache, const RowLoras* loras) {
  PX_CHECK(whole(),
           "forward_cached needs the whole model; a pipeline stage uses "
           "forward_cached_stage");
  return forward_cached_stage(tokens, nullptr, spans, cache, loras);
}

Tensor Transformer::forward_cached_stage(const int32_t* tokens, const float* hidden,
                                         const std::vector<PagedSpan>& spans, PagedKvCache& cache,
                                         const RowLoras* loras) {
  cached_layers();  // one chunk
  PX_CHECK(!tp_.sp(), "generation runs without sequence parallelism");
  PX_CHECK(!spans.empty(), "forward_cached needs at least one span");
  PX_CHECK(stage_.embedding ? tokens != nullptr : hidden != nullptr, "a {} stage needs its {}",
           stage_.embedding ? "first" : "later", stage_.embedding ? "tokens" : "hidden input");
  cache.check_spans(spans);
  std::vector<int64_t> pos;
  for (const PagedSpan& s : spans)
    for (int64_t i = 0; i < s.count; ++i) pos.push_back(s.pos0 + i);
  const int64_t N = static_cast<int64_t>(pos.size());
  for (int64_t i = 0; i < N; ++i) {
    PX_CHECK(!tokens || (tokens[i] >= 0 && tokens[i] < cfg_.vocab_size),
             "input token {} at position {} is outside the vocabulary ({})", tokens[i], pos[i],
             cfg_.vocab_size);
    // Dynamic NTK rope scaling runs past max_positions (rope_frequencies.h).
    PX_CHECK(pos[i] < rope_context_limit(cfg_), "position {} is beyond max_positions ({})", pos[i],
             cfg_.max_positions);
  }
  LayerContext c = context(1, N, pos);
  c.saved_tag = MemTag::Workspace;  // nothing outlives the call
  c.row_loras = loras;
  const int64_t C = cfg_.hidden;
  Tensor x = c.workspace({N, C}), y = c.workspace({N, C});
  const size_t row_bytes = static_cast<size_t>(C) * sizeof(float);
  if (stage_.embedding)
    embed_.forward(c, x.data<float>(), tokens);
  else
    ops::copy(c.stream(), x.data<float>(), hidden, static_cast<size_t>(N) * row_bytes);
  for (const Block& b : blocks_) {
    b.forward_cached(c, y.data<float>(), x.data<float>(), cache, spans);
    std::swap(x, y);
  }
  if (!stage_.head) {
    Tensor out = Tensor::zeros(alloc_, {N, C}, DType::F32, MemTag::Activation);
    ops::copy(c.stream(), out.data<float>(), x.data<float>(), static_cast<size_t>(N) * row_bytes);
    return out;
  }
  y = Tensor();
  const Norm::Saved fn = final_norm_.forward(c, x.data<float>());
  // Only each span's last token needs logits.
  const int64_t S = static_cast<int64_t>(spans.size());
  Tensor last = c.workspace({S, C});
  int64_t r = 0;
  for (int64_t i = 0; i < S; ++i) {
    r += spans[static_cast<size_t>(i)].count;
    ops::copy(c.stream(), last.data<float>() + i * C, fn.out.data<float>() + (r - 1) * C,
              row_bytes);
  }
  std::vector<int64_t> last_pos(static_cast<size_t>(S), 0);
  const LayerContext ch = context(1, S, last_pos);
  Tensor out = Tensor::zeros(alloc_, {S, cfg_.vocab_size}, DType::F32, MemTag::Activation);
  full_logits(ch, out.data<float>(), last.data<float>());
  return out;
}

}  // namespace parallm
