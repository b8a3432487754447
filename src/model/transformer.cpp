#include "model/transformer.h"

#include <numeric>

namespace parallm {

Transformer::Transformer(const ModelConfig& cfg, Allocator& alloc) : cfg_(cfg), alloc_(alloc) {
  cfg_.validate();
  embed_ = Embedding(params_, cfg_);
  // first[u]: the first parameter of unit u (embedding, blocks..., tail).
  std::vector<int> first{0};
  for (int l = 0; l < cfg_.n_layers; ++l) {
    first.push_back(params_.size());
    blocks_.emplace_back(params_, l, cfg_);
  }
  first.push_back(params_.size());
  final_norm_ = Norm(params_, "final_norm", cfg_.hidden, cfg_.uses_layernorm(), cfg_.norm_eps);
  head_ = LmHead(params_, cfg_, embed_.token_table());
  params_.allocate(alloc_);
  first.push_back(params_.size());
  auto offset = [&](int param) {
    return param < params_.size() ? params_.offset(param) : params_.total_numel();
  };
  for (size_t u = first.size() - 1; u-- > 0;)
    segments_.push_back({offset(first[u]), offset(first[u + 1]), first[u], first[u + 1]});
}

LayerContext Transformer::context(int64_t B, int64_t T, const std::vector<int64_t>& pos) {
  return LayerContext{alloc_, params_, B, T, pos.data()};
}

void Transformer::check_batch(const int32_t* inputs, int64_t B, int64_t T) const {
  PX_CHECK(B > 0 && T > 0, "empty batch (B {}, T {})", B, T);
  PX_CHECK(T <= cfg_.max_positions || !cfg_.uses_learned_positions(),
           "sequence length {} exceeds max_positions {}", T, cfg_.max_positions);
  for (int64_t i = 0; i < B * T; ++i)
    PX_CHECK(inputs[i] >= 0 && inputs[i] < cfg_.vocab_size,
             "input token {} at position {} is outside the vocabulary ({})", inputs[i], i,
             cfg_.vocab_size);
}

Transformer::Forward Transformer::run_forward(const LayerContext& c, const int32_t* inputs) {
  Forward f;
  const int64_t L = cfg_.n_layers;
  f.xs.reserve(L + 1);
  f.xs.push_back(c.activation({c.N(), cfg_.hidden}));
  before_unit(UnitPass::Forward, static_cast<int>(L + 1));
  embed_.forward(c, f.xs[0].data<float>(), inputs);
  for (int64_t l = 0; l < L; ++l) {
    f.xs.push_back(c.activation({c.N(), cfg_.hidden}));
    before_unit(UnitPass::Forward, static_cast<int>(L - l));
    f.blocks.push_back(blocks_[l].forward(c, f.xs[l + 1].data<float>(), f.xs[l].data<float>()));
  }
  before_unit(UnitPass::Forward, 0);
  f.final_norm = final_norm_.forward(c, f.xs[L].data<float>());
  return f;
}

LossSum Transformer::forward_backward(const int32_t* inputs, const int32_t* targets, int64_t B,
                                      int64_t T, double grad_scale) {
  check_batch(inputs, B, T);
  std::vector<int64_t> pos(T);
  std::iota(pos.begin(), pos.end(), 0);
  LayerContext c = context(B, T, pos);
  Forward f = run_forward(c, inputs);
  const int64_t L = cfg_.n_layers;

  Tensor dx = c.workspace({c.N(), cfg_.hidden});
  LossSum loss;
  {
    Tensor dnorm = c.workspace({c.N(), cfg_.hidden});
    before_unit(UnitPass::Backward, 0);
    loss = head_.loss_and_grad(c, dnorm.data<float>(), f.final_norm.out.data<float>(), targets,
                               grad_scale);
    final_norm_.backward(c, dx.data<float>(), dnorm.data<float>(), f.xs[L].data<float>(),
                         f.final_norm);
  }
  grad_ready(0);
  f.final_norm = {};
  f.xs[L] = {};
  for (int64_t l = L - 1; l >= 0; --l) {
    Tensor dprev = c.workspace({c.N(), cfg_.hidden});
    before_unit(UnitPass::Backward, static_cast<int>(L - l));
    blocks_[l].backward(c, dprev.data<float>(), dx.data<float>(), f.xs[l].data<float>(),
                        f.blocks[l]);
    f.blocks[l] = {};  // activations of this block are no longer needed
    f.xs[l + 1] = {};
    dx = dprev;
    grad_ready(static_cast<int>(L - l));
  }
  before_unit(UnitPass::Backward, static_cast<int>(L + 1));
  embed_.backward(c, dx.data<float>(), inputs);
  grad_ready(static_cast<int>(L + 1));
  return loss;
}

LossSum Transformer::forward_loss(const int32_t* inputs, const int32_t* targets, int64_t B,
                                  int64_t T) {
  check_batch(inputs, B, T);
  std::vector<int64_t> pos(T);
  std::iota(pos.begin(), pos.end(), 0);
  LayerContext c = context(B, T, pos);
  Forward f = run_forward(c, inputs);
  return head_.loss(c, f.final_norm.out.data<float>(), targets);
}

Tensor Transformer::logits(const int32_t* inputs, int64_t B, int64_t T) {
  check_batch(inputs, B, T);
  std::vector<int64_t> pos(T);
  std::iota(pos.begin(), pos.end(), 0);
  LayerContext c = context(B, T, pos);
  Forward f = run_forward(c, inputs);
  Tensor out = Tensor::zeros(alloc_, {B, T, cfg_.vocab_size}, DType::F32, MemTag::Activation);
  head_.logits(c, out.data<float>(), f.final_norm.out.data<float>());
  return out;
}

}  // namespace parallm
