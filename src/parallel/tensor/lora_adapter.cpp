#include "parallel/tensor/lora_adapter.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/rng.h"
#include "nn/matmul_precision.h"
#include "nn/op_buffers.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "ops/optimizer.h"

namespace parallm {

namespace {
// PEFT initialises A with kaiming_uniform_(a = sqrt(5)): gain sqrt(2 / (1 + 5)),
// bound gain * sqrt(3 / fan_in) = 1 / sqrt(in).
double a_bound(int64_t in_global) { return 1.0 / std::sqrt(static_cast<double>(in_global)); }
}  // namespace

LoraAdapter LoraAdapter::column(ParameterSet& adapters, const std::string& name, int64_t in,
                                int64_t out_global, int64_t out_local, int64_t out_begin,
                                int replicas, const LoraConfig& cfg, const TpGroup& tp) {
  PX_CHECK(cfg.rank > 0, "{}: LoRA rank must be positive, got {}", name, cfg.rank);
  LoraAdapter l;
  l.in_ = in;
  l.out_ = out_local;
  l.rank_ = cfg.rank;
  l.scale_ = cfg.scale();
  l.dropout_ = cfg.dropout;
  l.site_ = hash_name(name);
  const int64_t r = cfg.rank;
  l.a_ = adapters.add({.name = name + ".lora_A",
                       .shape = {r, in},
                       .init = InitKind::Uniform,
                       .init_std = a_bound(in),
                       .tp_grad_sum = tp.active()});
  l.b_ = adapters.add({.name = name + ".lora_B",
                       .shape = {out_local, r},
                       .global_shape = {out_global, r},
                       .shard_dim = tp.active() ? 0 : -1,
                       .shard_begin = out_begin,
                       .init = InitKind::Zeros,
                       .tp_replicas = replicas});
  return l;
}

LoraAdapter LoraAdapter::row(ParameterSet& adapters, const std::string& name, int64_t in_global,
                             int64_t in_local, int64_t in_begin, int64_t out, const LoraConfig& cfg,
                             const TpGroup& tp) {
  PX_CHECK(cfg.rank > 0, "{}: LoRA rank must be positive, got {}", name, cfg.rank);
  LoraAdapter l;
  l.in_ = in_local;
  l.out_ = out;
  l.rank_ = cfg.rank;
  l.in_begin_ = in_begin;
  l.scale_ = cfg.scale();
  l.dropout_ = cfg.dropout;
  l.site_ = hash_name(name);
  const int64_t r = cfg.rank;
  l.a_ = adapters.add({.name = name + ".lora_A",
                       .shape = {r, in_local},
                       .global_shape = {r, in_global},
                       .shard_dim = tp.active() ? 1 : -1,
                       .shard_begin = in_begin,
                       .init = InitKind::Uniform,
                       .init_std = a_bound(in_global)});
  l.b_ = adapters.add({.name = name + ".lora_B",
                       .shape = {out, r},
                       .init = InitKind::Zeros,
                       .tp_grad_sum = tp.active()});
  return l;
}

// The mask of element (row, feature) depends on the micro-batch key, this
// linear, the global sample and position of the row and the global feature,
// so every tp / sp / dp / pp layout drops the same elements. It is drawn on
// the host: a device's rows make a round trip through a host copy.
void LoraAdapter::apply_mask(const LayerContext& c, float* g_dev) const {
  const HostView<float> view(c.stream(), g_dev, c.N() * in_);
  float* g = view.get();
  const uint64_t key = mix64(c.dropout_seed ^ mix64(site_));
  const float keep = static_cast<float>(1.0 / (1.0 - dropout_));
  const int64_t N = c.N();
#pragma omp parallel for schedule(static)
  for (int64_t n = 0; n < N; ++n) {
    const int64_t b = n / c.T, t = n % c.T;
    const uint64_t k = mix64(key ^ mix64(static_cast<uint64_t>(c.sample_offset + b)));
    const uint64_t pos = static_cast<uint64_t>(c.positions[t]) << 32;
    float* row = g + n * in_;
    for (int64_t e = 0; e < in_; ++e)
      row[e] = uniform_at(k, pos | static_cast<uint64_t>(in_begin_ + e)) >= dropout_ ? row[e] * keep
                                                                                     : 0.0f;
  }
  view.write_back();
}

const float* LoraAdapter::dropped(const LayerContext& c, const float* x, Tensor& buf) const {
  if (dropout_ <= 0.0 || c.dropout_seed == 0) return x;
  buf = c.workspace({c.N(), in_});
  ops::copy(c.stream(), buf.data<float>(), x, static_cast<size_t>(c.N() * in_) * sizeof(float));
  apply_mask(c, buf.data<float>());
  return buf.data<float>();
}

Tensor LoraAdapter::scaled_h(const LayerContext& c, const float* xd) const {
  const int64_t N = c.N();
  Tensor h = c.workspace({N, rank_});
  matmul_act(c, false, true, N, rank_, in_, xd, in_, c.adapters->value(a_), in_, 0.0f,
             h.data<float>(), rank_);
  ops::scale_inplace(c.stream(), h.data<float>(), N * rank_, static_cast<float>(scale_));
  return h;
}

void LoraAdapter::forward_add(const LayerContext& c, float* out, const float* x) const {
  if (!active()) return;
  PX_CHECK(c.adapters != nullptr, "a LoRA linear ran without the adapter parameters");
  Tensor buf;
  const Tensor h = scaled_h(c, dropped(c, x, buf));
  buf = Tensor();
  matmul_act(c, false, true, c.N(), out_, rank_, h.data<float>(), rank_, c.adapters->value(b_),
             rank_, 1.0f, out, out_);
}

void LoraAdapter::backward(const LayerContext& c, float* dx, const float* dout,
                           const float* x) const {
  if (!active()) return;
  const ParameterSet& ps = *c.adapters;
  const int64_t N = c.N(), r = rank_;
  Tensor buf;
  const float* xd = dropped(c, x, buf);
  Tensor h = scaled_h(c, xd);
  // dB (out, r) += dout^T (scale h0); dh (N, r) = scale * dout B; dA (r, in) += dh^T xd
  matmul_act(c, true, false, out_, r, N, dout, out_, h.data<float>(), r, 1.0f, ps.grad(b_), r);
  float* dh = h.data<float>();
  matmul_act(c, false, false, N, r, out_, dout, out_, ps.value(b_), r, 0.0f, dh, r);
  ops::scale_inplace(c.stream(), dh, N * r, static_cast<float>(scale_));
  matmul_act(c, true, false, r, in_, N, dh, r, xd, in_, 1.0f, ps.grad(a_), in_);
  if (dx == nullptr) return;
  if (xd == x) {  // no dropout: dx += dh A
    matmul_act(c, false, false, N, in_, r, dh, r, ps.value(a_), in_, 1.0f, dx, in_);
    return;
  }
  float* g = buf.data<float>();  // dropout: dx += mask * (dh A) / (1 - p)
  matmul_act(c, false, false, N, in_, r, dh, r, ps.value(a_), in_, 0.0f, g, in_);
  apply_mask(c, g);
  ops::add_inplace(c.stream(), dx, g, N * in_);
}

}  // namespace parallm
