#include "plan/memory_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "base/error.h"
#include "plan/moe_memory.h"
#include "plan/parallm_activations.h"

namespace parallm {

ActivationModel activation_model_from_name(const std::string& s) {
  if (s == "megatron") return ActivationModel::Megatron16;
  if (s == "parallm") return ActivationModel::Parallm;
  PX_FAIL("unknown activation model '{}' (expected megatron or parallm)", s);
}

const char* activation_model_name(ActivationModel m) {
  switch (m) {
    case ActivationModel::Parallm:
      return "parallm";
    default:
      return "megatron";
  }
}

void MemoryQuery::validate() const {
  model.validate();
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
  if (model.moe.enabled() || ep > 1 || expert_tp != 1) validate_experts();
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

// The trainer's refusals (train/config/train_config.cpp), with its messages: the
// memory model describes only layouts that run (and not yet all of them).
void MemoryQuery::validate_experts() const {
  PX_CHECK(model.moe.enabled(), "expert parallelism (--ep {}) needs an MoE model (--num-experts)",
           ep);
  PX_CHECK(model.moe.num_experts % ep == 0, "num_experts ({}) is not divisible by ep ({})",
           model.moe.num_experts, ep);
  // Expert layers fold dp x cp into ep x expert-dp (grid/rank_grid.h).
  PX_CHECK((dp * cp) % ep == 0,
           "expert parallel size (--ep {}) must divide data parallel size (--dp {}) x context "
           "parallel size (--cp {}) = {}",
           ep, dp, cp, dp * cp);
  PX_CHECK(expert_tp == 1 || expert_tp == tp,
           "--expert-tp {}: experts split over tensor-parallel ranks are built for --expert-tp 1 "
           "(experts whole on every tp rank) or --expert-tp equal to --tp ({}) only",
           expert_tp, tp);
  if (expert_tp > 1) {
    const int64_t width = model.moe.expert_intermediate(model.intermediate);
    PX_CHECK(width % expert_tp == 0,
             "--expert-tp {}: the experts' width ({}) is not divisible by it", expert_tp, width);
    PX_CHECK(optimizer != OptimizerKind::Muon,
             "--expert-tp {} with muon: muon would need each expert matrix gathered over tp; use "
             "an element-wise optimizer",
             expert_tp);
    PX_CHECK(zero <= 2, "--expert-tp {} runs with DDP or ZeRO-1/2 only (--zero {})", expert_tp,
             zero);
  }
  PX_CHECK(ep == 1 || zero == 0 || optimizer != OptimizerKind::Muon,
           "expert parallelism (--ep {}) with ZeRO needs an element-wise optimizer, not muon (its "
           "shards are scattered spans)",
           ep);
  PX_CHECK(!lora.enabled(), "LoRA on an MoE model is not modelled ({} experts)",
           model.moe.num_experts);
}

namespace {

// Korthikanti et al.: 16-bit activation bytes of one layer, one micro-batch.
// An MoE layer (Megatron16 model, docs/memory.md "Experts") replaces the
// MLP's share of it, 2sbh (input) + 16sbh (4h-wide fc output and GELU
// output) + sbh (dropout mask), by the same items for its experts, counted
// per kept assignment (a per token: moe_assignments_per_token, an even
// load): 2sbh (input) + sbh (mask) + 4sbE (router logits and probabilities)
// + a sb (2h dispatched input + 2h expert output kept for the combine + 2 I_e
// per expert intermediate: fc, or gate and up, and the activation), plus a
// shared expert's intermediates, 2 S x (its inputs + 1) / t. Under expert
// tp 1 experts are not tp-split: their tokens are s b / t under sequence
// parallelism, s b without; under expert tp = t every tp rank feeds all s b
// tokens through I_e / t features. s = seq_len / cp tokens per cp rank, but
// capacity (a) is per whole sequence: every cp rank routes them whole.
double layer_activation_bytes(const MemoryQuery& q, bool moe) {
  const double s = static_cast<double>(q.seq_len) / q.cp, b = q.micro_batch;
  const double h = q.model.hidden, a = q.model.n_heads, t = q.tp;
  const double sbh = s * b * h;
  const double attn = 5.0 * a * s / (h * t);  // softmax input/output and dropout mask
  const bool split = q.sequence_parallel || t == 1;
  const double rest = split ? 34.0 / t : 10.0 + 24.0 / t;
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
  if (moe && q.recompute != Recompute::Full) {
    const MoeConfig& e = q.model.moe;
    const double inputs = q.model.uses_swiglu() ? 2.0 : 1.0;  // fc, or gate and up
    const double Ie = static_cast<double>(e.expert_intermediate(q.model.intermediate)) /
                      static_cast<double>(q.expert_tp);
    const double per_token = moe_assignments_per_token(e, q.seq_len);
    const double tokens = split ? s * b / t : s * b;
    const double fed = q.expert_tp > 1 ? s * b : tokens;  // rows each rank's experts get
    const double dense_mlp = split ? sbh * 19.0 / t : sbh * (3.0 + 16.0 / t);
    const double experts =
        tokens * (3.0 * h + 4.0 * static_cast<double>(e.num_experts)) +
        fed * per_token * (4.0 * h + 2.0 * Ie * (inputs + 1.0)) +
        s * b * 2.0 * static_cast<double>(e.shared_intermediate) * (inputs + 1.0) / t;
    bytes += experts - dense_mlp;
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
    case pipeline::ScheduleKind::DualPipeV:
      return p + 0.5;  // 2p + 1 half-stage chunks on every stage (m >= 2p)
    default:
      return std::min(p, m);  // 1F1B and ZB-H1 keep at most pp on stage 0
  }
}

// One block's tensors on a tensor-parallel rank, in ParameterSet order
// (norm1, q, k, v, o, norm2, then fc | gate, up and proj | down, each weight
// before its bias; an MoE layer (moe.is_moe_layer) has its router, experts
// and shared expert in place of the MLP, plan/moe_memory.h): column/row-
// parallel weights and column-parallel biases split; norms and row-parallel
// output biases replicated (partial under sp); with fewer key/value heads
// than tp ranks each keeps one replicated group, as Megatron does.
std::vector<LayerTensor> block_tensors(const MemoryQuery& q, int64_t layer) {
  const ModelConfig& m = q.model;
  const int64_t t = q.tp, C = m.hidden, Q = m.q_dim() / t, I = (m.intermediate + t - 1) / t;
  const int64_t K = m.head_dim * ((m.n_kv_heads + t - 1) / t);
  const bool bias = m.uses_bias(), qkv_bias = bias || m.qkv_bias;  // Qwen2: q, k, v only
  std::vector<LayerTensor> out;
  auto norm = [&] {
    for (int i = 0; i < (m.uses_layernorm() ? 2 : 1); ++i)
      out.push_back({.numel = C, .sp_partial = true});
  };
  auto linear = [&](int64_t in, int64_t o, bool has_bias, bool row_parallel) {
    out.push_back({.numel = in * o, .matrix = true});
    if (has_bias) out.push_back({.numel = o, .sp_partial = row_parallel});
  };
  norm();
  for (int64_t o : {Q, K, K}) linear(C, o, qkv_bias, false);
  linear(Q, C, bias, true);
  norm();
  if (m.moe.is_moe_layer(layer)) {
    const std::vector<LayerTensor> moe = moe_layer_tensors(m, t, q.ep, q.expert_tp);
    out.insert(out.end(), moe.begin(), moe.end());
    return out;
  }
  for (int i = 0; i < (m.uses_swiglu() ? 2 : 1); ++i) linear(C, I, bias, false);
  linear(I, C, bias, true);
  return out;
}

// Elements of `tensors`, each rounded up to `align` (parallm's ParameterSet
// pads every tensor to 16 floats; the Megatron model counts unpadded).
int64_t padded_numel(const std::vector<LayerTensor>& tensors, int64_t align, bool experts_only) {
  int64_t n = 0;
  for (const LayerTensor& x : tensors)
    if (!experts_only || x.expert) n += (x.numel + align - 1) / align * align;
  return n;
}

// The first pipeline stage's tensors in ParameterSet order (embedding,
// positions; its blocks; final norm and untied head with pp 1 or DualPipeV): elements on
// a tp rank, whether Muon treats it as a matrix (optim/muon.h) and whether it
// is an expert's.
std::vector<LayerTensor> stage_tensors(const MemoryQuery& q) {
  const ModelConfig& m = q.model;
  const int64_t C = m.hidden, vocab_rows = (m.vocab_size + q.tp - 1) / q.tp;
  std::vector<LayerTensor> out;
  out.push_back({.numel = vocab_rows * C});
  if (m.uses_learned_positions()) out.push_back({.numel = m.max_positions * C});
  const int64_t layers_here = (m.n_layers + q.pp - 1) / q.pp;
  for (int64_t l = 0; l < layers_here; ++l) {
    const std::vector<LayerTensor> b = block_tensors(q, l);
    out.insert(out.end(), b.begin(), b.end());
  }
  // The tail (final norm, untied head) is on the embedding's stage with one
  // stage, and with DualPipeV's V (stage 0 holds the first and last layers).
  if (q.pp == 1 || q.schedule == pipeline::ScheduleKind::DualPipeV) {
    for (int i = 0; i < (m.uses_layernorm() ? 2 : 1); ++i) out.push_back({.numel = C});
    if (!m.tie_embeddings) out.push_back({.numel = vocab_rows * C});
  }
  return out;
}

// Muon's state bytes on the most loaded rank: 4 per owned matrix element, 8
// per other owned element (padding included). With ZeRO over `shards` ranks
// rank r owns [r S, (r + 1) S) of the padded flat buffer, S = ceil(N / shards).
double muon_state_bytes(const MemoryQuery& q, int64_t align, int64_t shards) {
  std::vector<std::pair<int64_t, int64_t>> slots;  // (slot begin, matrix elements)
  int64_t N = 0;
  for (const LayerTensor& x : stage_tensors(q)) {
    slots.push_back({N, x.matrix ? x.numel : 0});
    N += (x.numel + align - 1) / align * align;
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
  const bool sp = q.sequence_parallel && q.tp > 1;
  UnitSizes u;
  u.embedding = padded_numel({{.numel = vocab_rows * C}}, align, false);
  if (m.uses_learned_positions())
    u.embedding += padded_numel({{.numel = m.max_positions * C}}, align, false);
  // The largest block (an MoE layer's router and experts are partial under sp).
  int64_t block_partial = 0;
  for (int64_t l = 0; l < (m.n_layers + q.pp - 1) / q.pp; ++l) {
    const std::vector<LayerTensor> b = block_tensors(q, l);
    u.block = std::max(u.block, padded_numel(b, align, false));
    int64_t partial = 0;
    for (const LayerTensor& x : b) partial += sp && x.sp_partial ? x.numel : 0;
    block_partial = std::max(block_partial, partial);
  }
  for (int64_t i = 0; i < norm_tensors; ++i) u.tail += padded_numel({{.numel = C}}, align, false);
  if (!m.tie_embeddings) u.tail += padded_numel({{.numel = vocab_rows * C}}, align, false);
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
int64_t parameters_held(const MemoryQuery& q, int64_t align, bool experts_only = false) {
  return padded_numel(stage_tensors(q), align, experts_only);
}

// What every category reads, built once per query (make_memory_context):
// the layout's shapes and the byte sizes of this rank's parameters. The
// category functions add to r in place and are inlined into
// estimate_memory, so its multiply-adds fuse as in the single function.
struct MemoryContext {
  const MemoryQuery& q;
  const ModelConfig& m;
  int64_t layers_here = 0;
  int64_t per_layer = 0;  // the largest layer (Megatron ZeRO-3)
  bool parallm = false;
  double params = 0;  // parameters held, padded under the Parallm model
  bool mixed = false;
  double weight_bytes = 0;
  double shards = 0;  // dp x cp
  // The elements this rank's optimizer updates (owned_elements).
  double owned = 0;
};

MemoryContext make_memory_context(const MemoryQuery& q) {
  MemoryContext c{.q = q, .m = q.model};
  c.layers_here = (c.m.n_layers + q.pp - 1) / q.pp;
  c.per_layer = unit_sizes(q, 1).block;  // the largest layer (Megatron ZeRO-3)
  c.parallm = q.activation_model != ActivationModel::Megatron16;
  // Bytes follow the storage (padded under the Parallm model); the count does not.
  c.params = static_cast<double>(parameters_held(q, c.parallm ? 16 : 1));
  c.mixed = q.precision != Precision::FP32;
  c.weight_bytes = c.mixed ? 2.0 : 4.0;
  c.shards = static_cast<double>(q.dp) * q.cp;
  return c;
}

// A ZeRO shard: parallm pads every rank's shard to ceil(N / shards)
// elements (parallel/data/shard_layout.h); the ZeRO paper's formulas divide.
double shard_elements(const MemoryContext& c, double n, bool sharded) {
  if (!sharded) return n;
  return c.parallm ? std::ceil(n / c.shards) : n / c.shards;
}

// Under ZeRO with ep, dense elements are sharded over dp x cp and expert
// elements over expert-dp (dp x cp / ep), as parallel/zero/expert_shards.h
// does: the optimizer holds exactly the owned elements, so do ZeRO-2's
// packed gradient shard (parallel/zero/grad_shard_reducer.h) and ZeRO-3's
// packed value shard (parallel/zero/param_gatherer.h: the same spans, and
// unlike plain ZeRO not padded to a common size).
double owned_elements(const MemoryContext& c, const MemoryBreakdown& r) {
  const MemoryQuery& q = c.q;
  double owned = shard_elements(c, c.params, q.zero >= 1);
  if (q.zero >= 1 && q.ep > 1) {
    if (c.parallm) {
      owned = static_cast<double>(
          zero1_ep_owned(stage_tensors(q), 16, static_cast<int64_t>(c.shards), q.ep));
    } else {
      const double experts = static_cast<double>(r.expert_params_per_rank);
      owned = (c.params - experts) / c.shards + experts / (c.shards / q.ep);
    }
  }
  return owned;
}

// The elements a rank holds of a state ZeRO shards at this stage or not.
double held_elements(const MemoryContext& c, bool sharded) {
  if (!sharded) return c.params;
  return c.q.ep > 1 ? c.owned : shard_elements(c, c.params, true);
}

// Megatron/ZeRO paper: 16-bit weights and gradients under mixed precision,
// the fp32 master copy counted with the optimizer (+4 bytes per element).
// Parallm (parallm_state_bytes): fp32 master values in the ParameterSet
// (sharded by ZeRO-3) plus the 16-bit GEMM copy of every local element
// (nn/matmul_precision.h: sized to the whole ParameterSet, so
// ZeRO-3 does not shard it), fp32 gradients, and no master copy among
// the optimizer states.
void price_parameters(const MemoryContext& c, MemoryBreakdown& r) {
  const double values_held = held_elements(c, c.q.zero >= 3);
  const ParallmStateBytes pb = parallm_state_bytes(c.q.precision);
  if (c.parallm)
    r.parameters = values_held * pb.master + c.params * pb.gemm_copy;
  else
    r.parameters = values_held * c.weight_bytes;
}

// Gradients: as the parameters (price_parameters), sharded from ZeRO-2.
void price_gradients(const MemoryContext& c, MemoryBreakdown& r) {
  const double grads_held = held_elements(c, c.q.zero >= 2);
  const ParallmStateBytes pb = parallm_state_bytes(c.q.precision);
  if (c.parallm)
    r.gradients = grads_held * pb.gradient;
  else
    r.gradients = grads_held * c.weight_bytes;
}

// Optimizer states: a fixed count per element, or for Muon 4 bytes per
// element of the blocks' 2-D matrices and 8 per other element, on the
// rank whose ZeRO shard holds the most non-matrix elements.
void price_optimizer_states(const MemoryContext& c, MemoryBreakdown& r) {
  const MemoryQuery& q = c.q;
  const int64_t zero_shards = q.zero >= 1 ? static_cast<int64_t>(c.shards) : 1;
  r.optimizer = (q.optimizer == OptimizerKind::Muon
                     ? muon_state_bytes(q, c.parallm ? 16 : 1, zero_shards)
                     : c.owned * optimizer_state_bytes_per_element(q.optimizer, false)) +
                (c.mixed && !c.parallm ? 4.0 * c.owned : 0.0);
}

// Parallm model: the tensors this implementation's layers save
// (plan/parallm_activations.h), and the LM head's logits chunk.
void price_activations_parallm(const MemoryContext& c, MemoryBreakdown& r) {
  const ParallmActivations a = parallm_activations(c.q);
  r.activation_per_layer = a.layers / static_cast<double>(c.layers_here);
  r.activations = (a.layers + a.outside) * r.micro_batches_in_flight + a.working;
  r.workspace = a.head_chunk;
}

// Megatron model: Korthikanti et al.'s count per layer (MoE layers their
// own), for every micro-batch in flight; full recompute rebuilds one
// layer's set at a time.
void price_activations_megatron(const MemoryContext& c, MemoryBreakdown& r) {
  const MemoryQuery& q = c.q;
  double layers = 0.0, rebuilt = 0.0;
  MemoryQuery one = q;
  one.recompute = Recompute::None;
  for (int64_t l = 0; l < c.layers_here; ++l) {
    const bool moe = c.m.moe.is_moe_layer(l);
    layers += layer_activation_bytes(q, moe);
    rebuilt = std::max(rebuilt, layer_activation_bytes(one, moe));
  }
  r.activation_per_layer = layers / static_cast<double>(c.layers_here);
  r.activations = layers * r.micro_batches_in_flight;
  if (q.recompute == Recompute::Full) r.activations += rebuilt;  // one layer at a time
}

// Communication buffers, Parallm model, what this implementation
// allocates: DDP reduces the flat gradient buffer in place (no buckets);
// ZeRO-2 stages gradients in two rotating buffers of the largest
// non-embedding unit plus a pinned one of the embedding
// (parallel/zero/unit_staging.h), ZeRO-3 a second set for gathered values
// (under ep too: a unit holds the rank's E / ep experts); under tp, the
// largest unit's partial gradients (sequence parallelism, replicated kv
// heads) are set aside and reduced in one buffer
// (parallel/tensor/partial_grad_sync.h).
void price_communication_parallm(const MemoryContext& c, MemoryBreakdown& r) {
  const MemoryQuery& q = c.q;
  const UnitSizes u = unit_sizes(q, 16);
  const double unit = 4.0 * static_cast<double>(2 * std::max(u.block, u.tail) + u.embedding);
  if (c.shards > 1 && q.zero >= 2) r.communication += unit * (q.zero >= 3 ? 2.0 : 1.0);
  if (q.tp > 1 && u.partial_reduced > 0)
    r.communication += 4.0 * static_cast<double>(u.partial_keep + u.partial_reduced);
  // Ring attention under cp (parallel/context/ring_attention.cpp, the
  // default --cp-comm ring): one layer's backward at a time holds five
  // blocks of this rank's keys and values (B x seq_len / cp x this tp
  // rank's kv width, twice): the block in hand, the next, this step's dK/dV
  // accumulator, the one in flight and the one arriving; each with room
  // for the 8-byte post-time stamps of the last hop's pieces, one per (key
  // chunk, batch entry, kv head), with two key chunks under load balancing.
  // Ulysses' all-to-all staging (--cp-comm a2a) is not counted.
  if (q.cp > 1) {
    const double heads = static_cast<double>((c.m.n_kv_heads + q.tp - 1) / q.tp);
    const double mb = static_cast<double>(q.micro_batch);
    r.communication +=
        5.0 * (4.0 * 2.0 * mb * static_cast<double>(q.seq_len / q.cp) * heads * c.m.head_dim +
               2.0 * mb * heads * 8.0);
  }
}

// Communication buffers, Megatron model: DDP buckets in flight, ZeRO-3
// gathered units (current + prefetched).
void price_communication_megatron(const MemoryContext& c, MemoryBreakdown& r) {
  const MemoryQuery& q = c.q;
  if (c.shards > 1 && q.zero <= 1) r.communication += 2.0 * q.bucket_mb * 1024 * 1024;
  if (q.zero >= 3) r.communication += 2.0 * static_cast<double>(c.per_layer) * c.weight_bytes;
}

// Pipeline send/receive buffers: parallm sends fp32 activations under
// every precision.
void price_pipeline_buffers(const MemoryContext& c, MemoryBreakdown& r) {
  const MemoryQuery& q = c.q;
  if (q.pp > 1)
    r.communication += 2.0 * static_cast<double>(q.seq_len) / q.cp * q.micro_batch * c.m.hidden *
                       (c.mixed && !c.parallm ? 2.0 : 4.0);
}

}  // namespace

// One category after another; the optimizer's and the held states' shares
// need the owned elements first, the activations the micro-batches in flight.
MemoryBreakdown estimate_memory(const MemoryQuery& q) {
  q.validate();
  MemoryContext c = make_memory_context(q);
  MemoryBreakdown r;
  r.params_per_rank = parameters_held(q, 1);
  r.expert_params_per_rank = parameters_held(q, 1, true);
  c.owned = owned_elements(c, r);
  price_parameters(c, r);
  price_gradients(c, r);
  price_optimizer_states(c, r);
  r.trainable_params = r.params_per_rank;
  r.micro_batches_in_flight = in_flight(q);
  if (c.parallm)
    price_activations_parallm(c, r);
  else
    price_activations_megatron(c, r);
  if (c.parallm)
    price_communication_parallm(c, r);
  else
    price_communication_megatron(c, r);
  price_pipeline_buffers(c, r);
  if (q.lora.enabled()) apply_lora(q, r);
  return r;
}

namespace {

// A higher ZeRO stage where there is more than one data-parallel rank and
// the trainer runs it: under ep every stage but Muon's (validate_experts).
bool raise_zero(MemoryQuery& x, int stage) {
  if (x.dp * x.cp == 1 || x.zero >= stage) return false;
  if (x.ep > 1 && x.optimizer == OptimizerKind::Muon) return false;
  if (x.expert_tp > 1 && stage > 2) return false;  // expert tp: DDP or ZeRO-1/2
  x.zero = stage;
  return true;
}

// dp can be halved with ep still dividing dp x cp.
bool halves_dp(const MemoryQuery& x) { return x.dp % 2 == 0 && (x.dp / 2 * x.cp) % x.ep == 0; }

}  // namespace

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
      {"--zero 1", [](MemoryQuery& x) { return raise_zero(x, 1); }},
      {"--zero 2", [](MemoryQuery& x) { return raise_zero(x, 2); }},
      {"--zero 3", [](MemoryQuery& x) { return raise_zero(x, 3); }},
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
         // Expert tp follows tp; its width must still divide.
         const int64_t width = x.model.moe.expert_intermediate(x.model.intermediate);
         return halves_dp(x) && x.model.n_heads % (2 * x.tp) == 0 &&
                        (x.expert_tp == 1 || width % (2 * x.expert_tp) == 0)
                    ? (x.tp *= 2, x.expert_tp *= x.expert_tp > 1 ? 2 : 1, x.dp /= 2, true)
                    : false;
       }},
      {"--pp doubled (dp halved)",
       [](MemoryQuery& x) {
         return halves_dp(x) && x.model.n_layers >= 2 * x.pp ? (x.pp *= 2, x.dp /= 2, true) : false;
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
