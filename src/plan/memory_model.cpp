#include "plan/memory_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "base/error.h"
#include "plan/parallm_activations.h"

namespace parallm {

ActivationModel activation_model_from_name(const std::string& s) {
  if (s == "megatron") return ActivationModel::Megatron16;
  if (s == "parallm") return ActivationModel::Parallm;
  if (s == "parallm-cuda") return ActivationModel::ParallmCuda;
  PX_FAIL("unknown activation model '{}' (expected megatron, parallm or parallm-cuda)", s);
}

void MemoryQuery::validate() const {
  model.validate();
  // Experts (their ep sharding, expert-dp ZeRO, dispatch buffers) are not in
  // the model yet: refused rather than counted as a dense model.
  PX_CHECK(!model.moe.enabled(),
           "the memory model does not count experts yet ({} experts, top {}): mixture-of-experts "
           "models are not modelled",
           model.moe.num_experts, model.moe.topk);
  PX_CHECK(
      tp >= 1 && pp >= 1 && dp >= 1 && cp >= 1 && ep >= 1 && virtual_stages >= 1,
      "parallel sizes must be at least 1 (tp {}, pp {}, dp {}, cp {}, ep {}, virtual stages {})",
      tp, pp, dp, cp, ep, virtual_stages);
  PX_CHECK(model.n_heads % tp == 0, "num_attention_heads ({}) is not divisible by tp ({})",
           model.n_heads, tp);
  PX_CHECK(model.n_layers % (pp * virtual_stages) == 0 || virtual_stages == 1,
           "num_layers ({}) is not divisible by pp ({}) x virtual stages ({})", model.n_layers, pp,
           virtual_stages);
  PX_CHECK(model.n_layers >= pp, "num_layers ({}) is smaller than pp ({})", model.n_layers, pp);
  PX_CHECK(seq_len % cp == 0, "seq_len ({}) is not divisible by cp ({})", seq_len, cp);
  PX_CHECK(seq_len > 0 && micro_batch > 0 && micro_batches > 0,
           "seq_len ({}), micro batch ({}) and micro batches ({}) must be positive", seq_len,
           micro_batch, micro_batches);
  PX_CHECK(zero >= 0 && zero <= 3, "zero stage must be 0-3, got {}", zero);
  PX_CHECK(lora.rank >= 0, "--lora-rank must be >= 0, got {}", lora.rank);
  PX_CHECK(!lora.qlora || lora.enabled(), "--qlora needs --lora-rank (the adapters it trains)");
  PX_CHECK(!lora.double_quant || lora.qlora, "--double-quant applies to --qlora's NF4 base only");
  if (!lora.enabled()) return;
  PX_CHECK(activation_model == ActivationModel::Megatron16,
           "LoRA is modelled with --activations megatron only (parallm's own LoRA layers are "
           "not in its activation count yet)");
  PX_CHECK(optimizer != OptimizerKind::Muon,
           "LoRA adapters with Muon are not modelled (use adam, adamw, sgd or momentum)");
}

namespace {

// Korthikanti et al.: 16-bit activation bytes of one layer, one micro-batch.
double layer_activation_bytes(const MemoryQuery& q) {
  const double s = static_cast<double>(q.seq_len) / q.cp, b = q.micro_batch;
  const double h = q.model.hidden, a = q.model.n_heads, t = q.tp;
  const double sbh = s * b * h;
  const double attn = 5.0 * a * s / (h * t);  // softmax input/output and dropout mask
  double rest;
  if (q.sequence_parallel || t == 1)
    rest = 34.0 / t;
  else
    rest = 10.0 + 24.0 / t;
  double bytes = 0.0;
  switch (q.recompute) {
    case Recompute::None:
      bytes = sbh * (rest + attn);
      break;
    case Recompute::Selective:
      bytes = sbh * rest;
      break;
    case Recompute::Full:
      bytes = 2.0 * sbh / (q.sequence_parallel ? t : 1.0);
      break;
  }
  return q.precision == Precision::FP32 ? 2.0 * bytes : bytes;
}

double in_flight(const MemoryQuery& q) {
  const double m = static_cast<double>(q.micro_batches), p = q.pp, v = q.virtual_stages;
  if (q.pp == 1) return 1.0;  // accumulation runs micro-batches one after another
  switch (q.schedule) {
    case pipeline::ScheduleKind::GPipe:
      return m;
    case pipeline::ScheduleKind::Interleaved:
      return std::min(p, m) * (1.0 + (p - 1.0) / (p * v));
    default:
      return std::min(p, m);  // 1F1B and ZB-H1 keep at most pp on stage 0
  }
}

// Elements this rank stores for its parameters: one block's tensors on a
// tensor-parallel rank (column/row-parallel weights and column-parallel
// biases split; norms and row-parallel output biases replicated; with fewer
// key/value heads than tp ranks each keeps one replicated group, as Megatron
// does), each rounded up to `align` elements (parallm's ParameterSet pads
// every tensor to 16 floats; the Megatron model counts unpadded).
struct ParamCounter {
  int64_t align = 1;
  int64_t n = 0;
  void add(int64_t elems) { n += (elems + align - 1) / align * align; }
};

void add_block_parameters(ParamCounter& pc, const ModelConfig& m, int64_t t) {
  const int64_t C = m.hidden, Q = m.q_dim() / t, I = (m.intermediate + t - 1) / t;
  const int64_t K = m.head_dim * ((m.n_kv_heads + t - 1) / t);
  const bool bias = m.uses_bias(), qkv_bias = bias || m.qkv_bias;  // Qwen2: q, k, v only
  const int64_t norm_tensors = m.uses_layernorm() ? 2 : 1;
  for (int64_t i = 0; i < 2 * norm_tensors; ++i) pc.add(C);  // norm1, norm2
  for (int64_t out : {Q, K, K}) {                            // q, k, v
    pc.add(C * out);
    if (qkv_bias) pc.add(out);
  }
  pc.add(Q * C);  // o
  if (bias) pc.add(C);
  for (int i = 0; i < (m.uses_swiglu() ? 2 : 1); ++i) {  // fc, or gate and up
    pc.add(C * I);
    if (bias) pc.add(I);
  }
  pc.add(I * C);  // proj / down
  if (bias) pc.add(C);
}

// The first pipeline stage's tensors in ParameterSet order (embedding,
// positions; per block norm1, q, k, v, o, norm2, fc | gate, up, then proj |
// down, each weight before its bias; final norm and untied head with pp 1):
// elements on a tp rank and whether Muon treats it as a matrix (optim/muon.h).
std::vector<std::pair<int64_t, bool>> stage_tensors(const MemoryQuery& q) {
  const ModelConfig& m = q.model;
  const int64_t t = q.tp, C = m.hidden, Q = m.q_dim() / t, I = (m.intermediate + t - 1) / t;
  const int64_t K = m.head_dim * ((m.n_kv_heads + t - 1) / t);
  const int64_t vocab_rows = (m.vocab_size + t - 1) / t;
  const bool bias = m.uses_bias(), ln = m.uses_layernorm();
  std::vector<std::pair<int64_t, bool>> out;
  auto norm = [&] {
    out.push_back({C, false});
    if (ln) out.push_back({C, false});
  };
  auto linear = [&](int64_t in, int64_t o, int64_t bias_elems, bool has_bias) {
    out.push_back({in * o, true});
    if (has_bias) out.push_back({bias_elems, false});
  };
  out.push_back({vocab_rows * C, false});
  if (m.uses_learned_positions()) out.push_back({m.max_positions * C, false});
  const int64_t layers_here = (m.n_layers + q.pp - 1) / q.pp;
  for (int64_t l = 0; l < layers_here; ++l) {
    norm();
    for (int64_t o : {Q, K, K}) linear(C, o, o, bias || m.qkv_bias);
    linear(Q, C, C, bias);
    norm();
    for (int i = 0; i < (m.uses_swiglu() ? 2 : 1); ++i) linear(C, I, I, bias);
    linear(I, C, C, bias);
  }
  if (q.pp == 1) {
    norm();
    if (!m.tie_embeddings) out.push_back({vocab_rows * C, false});
  }
  return out;
}

// Muon's state bytes on the most loaded rank: 4 per owned matrix element, 8
// per other owned element (padding included). With ZeRO over `shards` ranks
// rank r owns [r S, (r + 1) S) of the padded flat buffer, S = ceil(N / shards).
double muon_state_bytes(const MemoryQuery& q, int64_t align, int64_t shards) {
  std::vector<std::pair<int64_t, int64_t>> slots;  // (slot begin, matrix elements)
  int64_t N = 0;
  for (const auto& [n, matrix] : stage_tensors(q)) {
    slots.push_back({N, matrix ? n : 0});
    N += (n + align - 1) / align * align;
  }
  const int64_t S = (N + shards - 1) / shards;
  double worst = 0.0;
  for (int64_t r = 0; r < shards; ++r) {
    const int64_t b = std::min(N, r * S), e = std::min(N, (r + 1) * S);
    int64_t mat = 0;
    for (const auto& [begin, m] : slots)
      mat += std::max<int64_t>(0, std::min(e, begin + m) - std::max(b, begin));
    worst =
        std::max(worst, 4.0 * static_cast<double>(mat) + 8.0 * static_cast<double>(e - b - mat));
  }
  return worst;
}

// Floats of one unit's (a Transformer grad segment's) parameters on a tp
// rank: the embedding unit, one block, and the tail (final norm and an
// untied head), each tensor padded to `align`; and for the tp partial-
// gradient buffer (parallel/tensor/partial_grad_sync.h), the most floats one
// unit sets aside (`partial_keep`: parameters whose gradient is summed over
// tp: norms, row-parallel biases, learned positions under sequence
// parallelism, and key/value shards replicated when n_kv_heads < tp;
// unpadded) and the most it reduces (`partial_reduced`: a replicated shard
// travels in one slot per distinct shard, n_kv_heads slots).
struct UnitSizes {
  int64_t embedding = 0, block = 0, tail = 0, partial_keep = 0, partial_reduced = 0;
};

UnitSizes unit_sizes(const MemoryQuery& q, int64_t align) {
  const ModelConfig& m = q.model;
  const int64_t vocab_rows = (m.vocab_size + q.tp - 1) / q.tp, C = m.hidden;
  const int64_t norm_tensors = m.uses_layernorm() ? 2 : 1;
  UnitSizes u;
  ParamCounter e{align}, b{align}, t{align};
  e.add(vocab_rows * C);
  if (m.uses_learned_positions()) e.add(m.max_positions * C);
  add_block_parameters(b, m, q.tp);
  for (int64_t i = 0; i < norm_tensors; ++i) t.add(C);
  if (!m.tie_embeddings) t.add(vocab_rows * C);
  u.embedding = e.n;
  u.block = b.n;
  u.tail = t.n;
  const bool sp = q.sequence_parallel && q.tp > 1;
  const int64_t block_partial = sp ? 2 * norm_tensors * C + (m.uses_bias() ? 2 * C : 0) : 0;
  // k and v (weight and bias) when each kv head is held by several tp ranks.
  int64_t kv = 0, kv_slots = 1;
  if (q.tp > 1 && m.n_kv_heads < q.tp) {
    kv = 2 * m.head_dim * (C + (m.uses_bias() || m.qkv_bias ? 1 : 0));
    kv_slots = m.n_kv_heads;
  }
  const int64_t positions = sp && m.uses_learned_positions() ? m.max_positions * C : 0;
  const int64_t tail_partial = sp ? norm_tensors * C : 0;
  u.partial_keep = std::max({positions, block_partial + kv, tail_partial});
  u.partial_reduced = std::max({positions, block_partial + kv * kv_slots, tail_partial});
  return u;
}

// Parameters held by the most loaded rank (the first pipeline stage: the
// embedding and its layers; with pp 1 also the final norm and untied head).
int64_t parameters_held(const MemoryQuery& q, int64_t align) {
  const ModelConfig& m = q.model;
  const int64_t layers_here = (m.n_layers + q.pp - 1) / q.pp;
  const int64_t vocab_rows = (m.vocab_size + q.tp - 1) / q.tp;  // padded vocab-parallel shard
  ParamCounter pc{align};
  pc.add(vocab_rows * m.hidden);
  if (m.uses_learned_positions()) pc.add(m.max_positions * m.hidden);
  for (int64_t l = 0; l < layers_here; ++l) add_block_parameters(pc, m, q.tp);
  if (q.pp == 1) {
    for (int i = 0; i < (m.uses_layernorm() ? 2 : 1); ++i) pc.add(m.hidden);
    if (!m.tie_embeddings) pc.add(vocab_rows * m.hidden);
  }
  return pc.n;
}

}  // namespace

MemoryBreakdown estimate_memory(const MemoryQuery& q) {
  q.validate();
  const ModelConfig& m = q.model;
  const int64_t layers_here = (m.n_layers + q.pp - 1) / q.pp;
  ParamCounter one_block;
  add_block_parameters(one_block, m, q.tp);
  const int64_t per_layer = one_block.n;
  const bool parallm = q.activation_model != ActivationModel::Megatron16;
  // Bytes follow the storage (padded under the Parallm model); the count does not.
  const double params = static_cast<double>(parameters_held(q, parallm ? 16 : 1));

  MemoryBreakdown r;
  r.params_per_rank = parameters_held(q, 1);
  const bool mixed = q.precision != Precision::FP32;
  const double weight_bytes = mixed ? 2.0 : 4.0;
  const double shards = static_cast<double>(q.dp) * q.cp;
  // A ZeRO shard: parallm pads every rank's shard to ceil(N / shards)
  // elements (parallel/data/shard_layout.h); the ZeRO paper's formulas divide.
  auto shard = [&](double n, bool sharded) {
    if (!sharded) return n;
    return parallm ? std::ceil(n / shards) : n / shards;
  };
  // Megatron/ZeRO paper: 16-bit weights and gradients under mixed precision,
  // the fp32 master copy counted with the optimizer (+4 bytes per element).
  // Parallm (parallm_state_bytes): fp32 master values in the ParameterSet
  // (sharded by ZeRO-3) plus the 16-bit GEMM copy of every local element
  // (nn/matmul_precision.h: sized to the whole ParameterSet, so
  // ZeRO-3 does not shard it), fp32 gradients, and no master copy among
  // the optimizer states.
  const ParallmStateBytes pb = parallm_state_bytes(q.precision);
  if (parallm) {
    r.parameters = shard(params, q.zero >= 3) * pb.master + params * pb.gemm_copy;
    r.gradients = shard(params, q.zero >= 2) * pb.gradient;
  } else {
    r.parameters = shard(params, q.zero >= 3) * weight_bytes;
    r.gradients = shard(params, q.zero >= 2) * weight_bytes;
  }
  // Optimizer states: a fixed count per element, or for Muon 4 bytes per
  // element of the blocks' 2-D matrices and 8 per other element, on the
  // rank whose ZeRO shard holds the most non-matrix elements.
  const int64_t zero_shards = q.zero >= 1 ? static_cast<int64_t>(shards) : 1;
  r.optimizer =
      (q.optimizer == OptimizerKind::Muon
           ? muon_state_bytes(q, parallm ? 16 : 1, zero_shards)
           : shard(params, q.zero >= 1) * optimizer_state_bytes_per_element(q.optimizer, false)) +
      (mixed && !parallm ? 4.0 * shard(params, q.zero >= 1) : 0.0);

  r.trainable_params = r.params_per_rank;
  r.micro_batches_in_flight = in_flight(q);
  if (parallm) {
    const ParallmActivations a = parallm_activations(q);
    r.activation_per_layer = a.per_layer;
    r.activations =
        (a.per_layer * static_cast<double>(layers_here) + a.outside) * r.micro_batches_in_flight +
        a.working;
    r.workspace = a.head_chunk;
  } else {
    r.activation_per_layer = layer_activation_bytes(q);
    r.activations =
        r.activation_per_layer * static_cast<double>(layers_here) * r.micro_batches_in_flight;
    if (q.recompute == Recompute::Full) {  // one layer rebuilt at a time during backward
      MemoryQuery one = q;
      one.recompute = Recompute::None;
      r.activations += layer_activation_bytes(one);
    }
  }
  // Communication buffers. Megatron model: DDP buckets in flight, ZeRO-3
  // gathered units (current + prefetched), pipeline send/receive activations.
  // Parallm model, what this implementation allocates: DDP reduces the flat
  // gradient buffer in place (no buckets); ZeRO-2 stages gradients in two
  // rotating buffers of the largest non-embedding unit plus a pinned one of
  // the embedding (parallel/zero/unit_staging.h), ZeRO-3 a second set for
  // gathered values; under tp, the largest unit's partial gradients
  // (sequence parallelism, replicated kv heads) are set aside and reduced in
  // one buffer (parallel/tensor/partial_grad_sync.h).
  if (parallm) {
    const UnitSizes u = unit_sizes(q, 16);
    const double unit = 4.0 * static_cast<double>(2 * std::max(u.block, u.tail) + u.embedding);
    if (shards > 1 && q.zero >= 2) r.communication += unit * (q.zero >= 3 ? 2.0 : 1.0);
    if (q.tp > 1 && u.partial_reduced > 0)
      r.communication += 4.0 * static_cast<double>(u.partial_keep + u.partial_reduced);
  } else {
    if (shards > 1 && q.zero <= 1) r.communication += 2.0 * q.bucket_mb * 1024 * 1024;
    if (q.zero >= 3) r.communication += 2.0 * static_cast<double>(per_layer) * weight_bytes;
  }
  // Pipeline send/receive buffers: parallm sends fp32 activations under
  // every precision.
  if (q.pp > 1)
    r.communication += 2.0 * static_cast<double>(q.seq_len) / q.cp * q.micro_batch * m.hidden *
                       (mixed && !parallm ? 2.0 : 4.0);
  if (q.lora.enabled()) apply_lora(q, r);
  return r;
}

std::vector<MemorySuggestion> suggest_fits(const MemoryQuery& q, double device_bytes) {
  std::vector<std::pair<std::string, std::function<bool(MemoryQuery&)>>> changes = {
      {"--sequence-parallel",
       [](MemoryQuery& x) {
         return x.tp > 1 && !x.sequence_parallel ? (x.sequence_parallel = true) : false;
       }},
      {"--recompute selective",
       [](MemoryQuery& x) {
         return x.recompute == Recompute::None ? (x.recompute = Recompute::Selective, true) : false;
       }},
      {"--zero 1",
       [](MemoryQuery& x) { return x.dp * x.cp > 1 && x.zero < 1 ? (x.zero = 1, true) : false; }},
      {"--zero 2",
       [](MemoryQuery& x) { return x.dp * x.cp > 1 && x.zero < 2 ? (x.zero = 2, true) : false; }},
      {"--zero 3",
       [](MemoryQuery& x) { return x.dp * x.cp > 1 && x.zero < 3 ? (x.zero = 3, true) : false; }},
      {"--recompute full",
       [](MemoryQuery& x) {
         return x.recompute != Recompute::Full ? (x.recompute = Recompute::Full, true) : false;
       }},
      {"--micro-batch-size halved",
       [](MemoryQuery& x) {
         return x.micro_batch > 1 ? (x.micro_batch /= 2, x.micro_batches *= 2, true) : false;
       }},
      {"--tp doubled (dp halved)",
       [](MemoryQuery& x) {
         return x.dp % 2 == 0 && x.model.n_heads % (2 * x.tp) == 0 ? (x.tp *= 2, x.dp /= 2, true)
                                                                   : false;
       }},
      {"--pp doubled (dp halved)",
       [](MemoryQuery& x) {
         return x.dp % 2 == 0 && x.model.n_layers >= 2 * x.pp ? (x.pp *= 2, x.dp /= 2, true)
                                                              : false;
       }},
  };
  std::vector<MemorySuggestion> out;
  for (auto& [name, apply] : changes) {  // single changes
    MemoryQuery x = q;
    if (!apply(x)) continue;
    double total = estimate_memory(x).total();
    if (total <= device_bytes) out.push_back({name, x, total});
  }
  if (!out.empty()) return out;
  MemoryQuery x = q;  // cumulative, in the same order
  std::string what;
  for (auto& [name, apply] : changes) {
    if (!apply(x)) continue;
    what += (what.empty() ? "" : " ") + name;
    double total = estimate_memory(x).total();
    if (total <= device_bytes) return {{what, x, total}};
  }
  return out;
}

double parse_bytes(const std::string& s) {
  size_t i = 0;
  double v = 0;
  try {
    v = std::stod(s, &i);
  } catch (const std::exception&) {
    PX_FAIL("cannot read a byte count from '{}' (e.g. 80GiB, 24GB)", s);
  }
  std::string unit = s.substr(i);
  const std::pair<const char*, double> kUnits[] = {{"", 1},
                                                   {"B", 1},
                                                   {"KB", 1e3},
                                                   {"MB", 1e6},
                                                   {"GB", 1e9},
                                                   {"TB", 1e12},
                                                   {"KiB", 1024.0},
                                                   {"MiB", 1048576.0},
                                                   {"GiB", 1073741824.0},
                                                   {"TiB", 1099511627776.0}};
  for (const auto& [name, mult] : kUnits)
    if (unit == name) return v * mult;
  PX_FAIL("unknown unit '{}' in '{}' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", unit, s);
}

}  // namespace parallm
