// CudaTransformer (cuda_transformer.h): buffers, parameter copies, clipping,
// the optimizer and profiling. A step's embedding, head and order live in
// cuda_transformer_step.cpp, one block's forward and backward in cuda_block.cpp.
#include "model/cuda/cuda_transformer.h"

#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"
#include "kernels/cuda/convert.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/optimizer.h"
#include "model/cuda/cuda_transformer_impl.h"

namespace parallm {

namespace {

Tensor device_tensor(Allocator& a, int64_t n, DType dt, MemTag tag) {
  return Tensor::zeros(a, Shape{n}, dt, tag, Device::CUDA);
}

}  // namespace

int64_t CudaTransformer::Impl::offset_of(const std::string& name) const {
  for (const auto& e : params)
    if (e.name == name) return e.offset;
  PX_FAIL("the GPU model found no parameter named {}", name);
}

template <class T>
const T* CudaTransformer::Impl::weight(const std::string& name) const {
  if constexpr (std::is_same_v<T, float>)
    return values.data<float>() + offset_of(name);
  else
    return static_cast<const T*>(values16.raw()) + offset_of(name);
}

float* CudaTransformer::Impl::grad(const std::string& name) const {
  return grads.data<float>() + offset_of(name);
}

template const float* CudaTransformer::Impl::weight<float>(const std::string&) const;
template const __nv_bfloat16* CudaTransformer::Impl::weight<__nv_bfloat16>(
    const std::string&) const;

CudaTransformer::Impl::Impl(const ModelConfig& c, const ParameterSet& host, Allocator& a,
                            CudaPrecision p, int64_t max_B_, int64_t T_, bool allow_tf32)
    : cfg(c), alloc(a), precision(p), max_B(max_B_), seq(T_), blas(allow_tf32) {
  PX_CHECK(!cfg.moe.enabled() && !cfg.lora.enabled(),
           "--device cuda: MoE and LoRA are not on the GPU yet");
  PX_CHECK(!cfg.gemma(),
           "--device cuda: the Gemma family (GeGLU, sqrt(hidden) embedding scale, (1 + w) "
           "RMSNorm) is not on the GPU yet; train it on the CPU");
  PX_CHECK(!cfg.qkv_bias,
           "--device cuda: q/k/v projection biases (Qwen2, qkv_bias) are not on the GPU yet; "
           "train this model on the CPU");
  PX_CHECK(cfg.attn_dropout == 0.0 && cfg.hidden_dropout == 0.0,
           "--device cuda: dropout is not on the GPU yet (attn {}, hidden {})", cfg.attn_dropout,
           cfg.hidden_dropout);
  PX_CHECK(seq <= cfg.max_positions, "sequence length {} exceeds max_positions {}", seq,
           cfg.max_positions);
  PX_CHECK(cfg.rope_scaling.type == RopeScalingType::None,
           "--device cuda: rope_scaling '{}' is not on the GPU yet (its rope kernel takes "
           "rope_theta only); train this model on the CPU",
           rope_scaling_name(cfg.rope_scaling.type));
  PX_CHECK(cfg.sliding_window == 0 || cfg.sliding_window >= seq,
           "--device cuda: sliding-window attention (window {} < sequence length {}) is not on "
           "the GPU yet; train it on the CPU backend",
           cfg.sliding_window, seq);
  for (int i = 0; i < host.size(); ++i)
    params.push_back({host.spec(i).name, host.offset(i), host.numel(i), host.spec(i).weight_decay});
  // A blocking stream: it orders after the device memory's zero-fills on the legacy stream.
  PX_CUDA(cudaStreamCreate(&stream));
  const DType act = p == CudaPrecision::BF16 ? DType::BF16 : DType::F32;
  const int64_t n = host.total_numel();
  values = device_tensor(a, n, DType::F32, MemTag::Parameter);
  grads = device_tensor(a, n, DType::F32, MemTag::Gradient);
  if (act == DType::BF16) values16 = device_tensor(a, n, DType::BF16, MemTag::Parameter);
  PX_CUDA(cudaMemcpyAsync(values.raw(), host.flat_values().raw(), n * sizeof(float),
                          cudaMemcpyHostToDevice, stream));
  refresh_bf16();

  const int64_t N = max_B * seq, C = cfg.hidden, I = cfg.intermediate, L = cfg.n_layers;
  const int64_t BHT = max_B * cfg.n_heads * seq;
  const bool layernorm = cfg.uses_layernorm(), swiglu = cfg.uses_swiglu();
  auto act_buf = [&](int64_t elems) { return device_tensor(a, elems, act, MemTag::Activation); };
  auto f32_buf = [&](int64_t elems, MemTag tag) {
    return device_tensor(a, elems, DType::F32, tag);
  };
  layers.resize(static_cast<size_t>(L));
  for (auto& s : layers) {
    s.x = act_buf(N * C);
    s.ln1 = act_buf(N * C);
    if (layernorm) s.mean1 = f32_buf(N, MemTag::Activation);
    s.rstd1 = f32_buf(N, MemTag::Activation);
    s.q = act_buf(N * cfg.q_dim());
    s.k = act_buf(N * cfg.kv_dim());
    s.v = act_buf(N * cfg.kv_dim());
    s.att = act_buf(N * cfg.q_dim());
    s.lse = f32_buf(BHT, MemTag::Activation);
    s.mid = act_buf(N * C);
    s.ln2 = act_buf(N * C);
    if (layernorm) s.mean2 = f32_buf(N, MemTag::Activation);
    s.rstd2 = f32_buf(N, MemTag::Activation);
    s.pre = act_buf(N * I);
    if (swiglu) s.up = act_buf(N * I);
    s.h = act_buf(N * I);
  }
  xf = act_buf(N * C);
  lnf = act_buf(N * C);
  if (layernorm) meanf = f32_buf(N, MemTag::Activation);
  rstdf = f32_buf(N, MemTag::Activation);

  // Workspace: gradients of activations, one layer at a time, and the head's chunk of logits.
  head_rows = std::min<int64_t>(N, std::max<int64_t>(1, (int64_t{1} << 28) / cfg.vocab_size));
  auto ws = [&](int64_t elems) { return device_tensor(a, elems, act, MemTag::Workspace); };
  dx = ws(N * C);
  dln = ws(N * C);
  dq = ws(N * cfg.q_dim());
  dk = ws(N * cfg.kv_dim());
  dv = ws(N * cfg.kv_dim());
  datt = ws(N * cfg.q_dim());
  if (swiglu) dh = ws(N * I);  // GPT-2 takes d(pre) straight from the GEMM (linear_backward_gelu)
  dpre = ws(N * I);
  if (swiglu) dup = ws(N * I);
  logits = ws(head_rows * cfg.vocab_size);
  losses = f32_buf(N, MemTag::Workspace);
  tokens = device_tensor(a, N, DType::I32, MemTag::Workspace);
  targets = device_tensor(a, N, DType::I32, MemTag::Workspace);
  positions = device_tensor(a, N, DType::I32, MemTag::Workspace);
  if (!cfg.uses_learned_positions()) {  // RoPE's positions: 0..seq-1, shared by every row
    rope_positions = device_tensor(a, seq, DType::I64, MemTag::Workspace);
    std::vector<int64_t> pos(static_cast<size_t>(seq));
    for (int64_t t = 0; t < seq; ++t) pos[static_cast<size_t>(t)] = t;
    PX_CUDA(cudaMemcpy(rope_positions.raw(), pos.data(), seq * sizeof(int64_t),
                       cudaMemcpyHostToDevice));
  }
  sumsq = device_tensor(a, 1, DType::F64, MemTag::Workspace);
  scratch = device_tensor(a, static_cast<int64_t>(scratch_bytes()), DType::U8, MemTag::Workspace);
  m = f32_buf(n, MemTag::Optimizer);
  v = f32_buf(n, MemTag::Optimizer);
  // Which 16-element blocks decay (the ParameterSet pads every tensor to 16).
  std::vector<uint8_t> mask(static_cast<size_t>(n / 16), 0);
  for (const auto& e : params)
    if (e.decay)
      std::fill(mask.begin() + e.offset / 16, mask.begin() + (e.offset + e.numel + 15) / 16, 1);
  decay_mask = device_tensor(a, n / 16, DType::U8, MemTag::Workspace);
  PX_CUDA(cudaMemcpy(decay_mask.raw(), mask.data(), mask.size(), cudaMemcpyHostToDevice));
  PX_CUDA(cudaStreamSynchronize(stream));
}

CudaTransformer::Impl::~Impl() {
  for (auto& m : marks) cudaEventDestroy(m.second);
  if (last_mark) cudaEventDestroy(last_mark);
  cudaStreamDestroy(stream);
}

void CudaTransformer::Impl::mark(const char* name) {
  if (!profiling) return;
  cudaEvent_t e = nullptr;
  PX_CUDA(cudaEventCreate(&e));
  PX_CUDA(cudaEventRecord(e, stream));
  marks.emplace_back(name, e);
}

void CudaTransformer::set_profiling(bool on) {
  Impl& s = *impl_;
  s.profiling = on;
  if (on && !s.last_mark) {
    PX_CUDA(cudaEventCreate(&s.last_mark));
    PX_CUDA(cudaEventRecord(s.last_mark, s.stream));
  }
}

std::vector<std::pair<std::string, double>> CudaTransformer::take_profile() {
  Impl& s = *impl_;
  std::vector<std::pair<std::string, double>> out;
  if (!s.last_mark) return out;
  PX_CUDA(cudaStreamSynchronize(s.stream));
  for (auto& [name, e] : s.marks) {
    float ms = 0.f;
    PX_CUDA(cudaEventElapsedTime(&ms, s.last_mark, e));
    auto it = std::find_if(out.begin(), out.end(), [&](const auto& p) { return p.first == name; });
    if (it == out.end())
      out.emplace_back(name, ms);
    else
      it->second += ms;
    PX_CUDA(cudaEventDestroy(s.last_mark));
    s.last_mark = e;
  }
  s.marks.clear();
  return out;
}

void CudaTransformer::Impl::refresh_bf16() {
  if (!values16.defined()) return;
  cuda::f32_to_bf16(static_cast<__nv_bfloat16*>(values16.raw()), values.data<float>(),
                    values.numel(), stream);
}

CudaTransformer::CudaTransformer(const ModelConfig& cfg, const ParameterSet& host,
                                 Allocator& device_alloc, CudaPrecision precision, int64_t max_B,
                                 int64_t T, bool allow_tf32)
    : impl_(std::make_unique<Impl>(cfg, host, device_alloc, precision, max_B, T, allow_tf32)) {}

CudaTransformer::~CudaTransformer() = default;

cudaStream_t CudaTransformer::stream() const { return impl_->stream; }
const ModelConfig& CudaTransformer::config() const { return impl_->cfg; }

void CudaTransformer::zero_grads() {
  PX_CUDA(cudaMemsetAsync(impl_->grads.raw(), 0, impl_->grads.nbytes(), impl_->stream));
}

double CudaTransformer::forward_backward(const int32_t* inputs, const int32_t* targets, int64_t B,
                                         double grad_scale) {
  Impl& s = *impl_;
  PX_CHECK(B >= 1 && B <= s.max_B, "micro-batch {} outside 1..{} (the buffers' size)", B, s.max_B);
  return s.precision == CudaPrecision::BF16 ? s.step<__nv_bfloat16>(inputs, targets, B, grad_scale)
                                            : s.step<float>(inputs, targets, B, grad_scale);
}

double CudaTransformer::clip_grad_norm(double max_norm) {
  Impl& s = *impl_;
  const int64_t n = s.grads.numel();
  cuda::sum_squares(s.sumsq.data<double>(), s.grads.data<float>(), n, s.scratch.raw(), s.stream);
  if (max_norm > 0.0)
    cuda::clip_by_norm(s.grads.data<float>(), n, s.sumsq.data<double>(),
                       static_cast<float>(max_norm), s.stream);
  s.mark("clip");
  double sq = 0.0;
  PX_CUDA(cudaMemcpyAsync(&sq, s.sumsq.raw(), sizeof(double), cudaMemcpyDeviceToHost, s.stream));
  PX_CUDA(cudaStreamSynchronize(s.stream));
  return std::sqrt(sq);
}

void CudaTransformer::optimizer_step(const OptimizerConfig& oc, double lr, int64_t step) {
  Impl& s = *impl_;
  PX_CHECK(oc.kind == OptimizerKind::AdamW || oc.kind == OptimizerKind::Adam,
           "--device cuda: only Adam and AdamW run on the GPU so far");
  auto* p16 = s.values16.defined() ? static_cast<__nv_bfloat16*>(s.values16.raw()) : nullptr;
  const cpu::AdamWParams h{.lr = lr,
                           .beta1 = oc.beta1,
                           .beta2 = oc.beta2,
                           .eps = oc.eps,
                           .weight_decay = oc.weight_decay,
                           .step = step};
  // One launch for every parameter: decay per 16-element block (decay_mask).
  cuda::adam_step_masked(s.values.data<float>(), s.grads.data<float>(), s.m.data<float>(),
                         s.v.data<float>(), s.values.numel(), h, oc.kind == OptimizerKind::AdamW,
                         s.decay_mask.data<uint8_t>(), p16, s.stream);
  s.mark("optimizer");
}

void CudaTransformer::copy_values_to(ParameterSet& host) const {
  const Impl& s = *impl_;
  PX_CHECK(host.total_numel() == s.values.numel(), "host set has {} values, the GPU model {}",
           host.total_numel(), s.values.numel());
  PX_CUDA(cudaMemcpyAsync(host.flat_values().raw(), s.values.raw(), s.values.nbytes(),
                          cudaMemcpyDeviceToHost, s.stream));
  PX_CUDA(cudaStreamSynchronize(s.stream));
}

}  // namespace parallm
