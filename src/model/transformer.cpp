#include "model/transformer.h"

#include <numeric>

#include "ops/copy.h"
#include "parallel/context/cp_chunks.h"
#include "parallel/tensor/mappings.h"

namespace parallm {

namespace {
const ModelConfig& checked(const ModelConfig& cfg, const TpGroup& tp, const EpGroup& ep) {
  cfg.validate();
  check_tp_divides(cfg, tp.size());  // before any parameter is registered
  if (cfg.moe.enabled()) {
    ep.local_experts(cfg.moe.num_experts);  // throws unless ep divides the experts
    PX_CHECK(cfg.moe.shared_intermediate % tp.size() == 0,
             "moe shared expert intermediate size ({}) is not divisible by tp ({})",
             cfg.moe.shared_intermediate, tp.size());
  } else {
    PX_CHECK(!ep.active(), "expert parallelism (ep {}) needs an MoE model (num_experts > 0)",
             ep.size());
  }
  return cfg;
}
}  // namespace

Transformer::Transformer(const ModelConfig& cfg, Allocator& alloc, const TpGroup& tp,
                         const ModelStage& stage, const EpGroup& ep, const CpGroup& cp)
    : cfg_(checked(cfg, tp, ep)), stage_(stage), alloc_(alloc), tp_(tp), ep_(ep), cp_(cp) {
  if (stage_.chunks.empty()) stage_.chunks.push_back({0, static_cast<int>(cfg_.n_layers)});
  if (cfg_.moe.enabled() && cfg_.moe.expert_bias)
    expert_bias_ = ExpertBias(cfg_.n_layers, cfg_.moe.num_experts);
  for (const LayerRange& r : stage_.chunks)
    PX_CHECK(r.first >= 0 && r.count >= 1 && r.first + r.count <= cfg_.n_layers,
             "stage chunk of layers [{}, {}) is outside the model's {} layers", r.first,
             r.first + r.count, cfg_.n_layers);
  // first[u]: the first parameter of unit u (embedding, blocks..., tail).
  std::vector<int> first;
  ParameterSet& base = base_params();
  ParameterSet* adapters = cfg_.lora.enabled() ? &params_ : nullptr;
  if (stage_.embedding) {
    first.push_back(params_.size());
    embed_ = Embedding(base, cfg_, tp_);
  }
  for (const LayerRange& r : stage_.chunks) {
    chunk_first_block_.push_back(static_cast<int>(blocks_.size()));
    for (int l = r.first; l < r.first + r.count; ++l) {
      first.push_back(params_.size());
      blocks_.emplace_back(base, l, cfg_, tp_, ep_, cp_, adapters);
    }
  }
  if (stage_.head) {
    first.push_back(params_.size());
    ParamRef table = embed_.token_table();
    if (cfg_.tie_embeddings && !stage_.embedding) {  // this stage's copy of the tied table
      const VocabShard vs = VocabShard::of(cfg_.vocab_size, tp_.size(), tp_.rank());
      table = base.add({.name = "embed.weight",
                        .shape = {vs.rows, cfg_.hidden},
                        .global_shape = {vs.padded, cfg_.hidden},
                        .shard_dim = tp_.active() ? 0 : -1,
                        .shard_begin = vs.begin,
                        .init_std = cfg_.init_std,
                        .pipeline_copy = true});
    }
    final_norm_ = Norm(base, "final_norm", cfg_.hidden, cfg_.uses_layernorm(), cfg_.norm_eps,
                       tp_.sp(), cfg_.norm_adds_one());
    head_ = LmHead(base, cfg_, table, tp_);
  }
  params_.allocate(alloc_);
  if (adapters != nullptr) frozen_.allocate(alloc_, false);
  const int units = static_cast<int>(first.size());
  first.push_back(params_.size());
  int u = 0;
  if (stage_.embedding) embed_segment_ = units - 1 - u++;
  for (size_t b = 0; b < blocks_.size(); ++b) block_segment_.push_back(units - 1 - u++);
  if (stage_.head) tail_segment_ = units - 1 - u++;
  auto offset = [&](int param) {
    return param < params_.size() ? params_.offset(param) : params_.total_numel();
  };
  std::vector<std::pair<int, int>> unit_params;
  for (int v = units; v-- > 0;) {
    segments_.push_back({offset(first[v]), offset(first[v + 1]), first[v], first[v + 1]});
    unit_params.emplace_back(first[v], first[v + 1]);
  }
  partial_grads_ = PartialGradSync(params_, unit_params, tp_, alloc_);
}

LayerContext Transformer::context(int64_t B, int64_t T, const std::vector<int64_t>& pos) {
  LayerContext c{alloc_, base_params(), B, T, pos.data()};
  if (cfg_.lora.enabled()) c.adapters = &params_;
  c.matmul = matmul_;
  c.recompute = recompute_;
  c.tap = tap_;
  c.faults = faults_;
  c.expert_bias = &expert_bias_;
  return c;
}

void Transformer::tap_model_op(const LayerContext& c, const char* op, int layer,
                               const float* x) const {
  if (c.tap == nullptr) return;
  LayerContext cl = c;
  cl.layer = layer;
  const int64_t rows = tp_local_rows(tp_, c.N());
  tap_stream(cl, op, TapPass::Forward, x, tp_.sp() ? tp_.rank() * rows : 0, rows, cfg_.hidden,
             c.N());
}

int Transformer::block_segment(int layer) const {
  int b = 0;
  for (const LayerRange& r : stage_.chunks)
    for (int l = r.first; l < r.first + r.count; ++l, ++b)
      if (l == layer) return block_segment_[b];
  return -1;
}

void Transformer::set_packed_docs(const PackedDocs& docs) {
  PX_CHECK(!docs.any() || (docs.eod >= 0 && docs.eod < cfg_.vocab_size),
           "packed documents: the end-of-document token ({}) is outside the vocabulary ({})",
           docs.eod, cfg_.vocab_size);
  docs_ = docs;
}

void Transformer::LocalBatch::attach(LayerContext& c) const {
  if (!doc_start.empty()) {
    c.doc_start = doc_start.data();
    c.doc_len = full_T;
  }
  if (!position_ids.empty()) c.position_ids = position_ids.data();
}

Transformer::LocalBatch Transformer::local_batch(const int32_t* inputs, const int32_t* targets,
                                                 int64_t B, int64_t T,
                                                 const int32_t* doc_inputs) const {
  LocalBatch lb = local_batch_plain(inputs, targets, B, T);
  if (!docs_.any()) return lb;
  if (doc_inputs == nullptr) doc_inputs = inputs;
  PX_CHECK(doc_inputs != nullptr, "packed documents need the micro-batch's input tokens");
  lb.full_T = T;
  const std::vector<int64_t> start = document_starts(doc_inputs, B, T, docs_.eod);
  if (docs_.eod_mask_loss && targets) {  // Megatron: no loss where the input is the EOD
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < lb.T; ++t)
        if (doc_inputs[b * T + lb.pos[t]] == docs_.eod) lb.targets[b * lb.T + t] = -1;
  }
  if (docs_.reset_position_ids) {
    lb.position_ids.resize(static_cast<size_t>(B * lb.T));
    for (int64_t b = 0; b < B; ++b)
      for (int64_t t = 0; t < lb.T; ++t)
        lb.position_ids[b * lb.T + t] = lb.pos[t] - start[b * T + lb.pos[t]];
  }
  if (docs_.reset_attention_mask) lb.doc_start = start;
  return lb;
}

Transformer::LocalBatch Transformer::local_batch_plain(const int32_t* inputs,
                                                       const int32_t* targets, int64_t B,
                                                       int64_t T) const {
  LocalBatch lb;
  if (!cp_.active()) {
    lb.T = T;
    lb.pos.resize(static_cast<size_t>(T));
    std::iota(lb.pos.begin(), lb.pos.end(), 0);
    if (inputs) lb.inputs.assign(inputs, inputs + B * T);
    if (targets) lb.targets.assign(targets, targets + B * T);
    return lb;
  }
  const CpChunks ch = cp_chunks(T, cp_.size(), cp_.load_balance);
  lb.T = ch.local_len();
  lb.pos = ch.positions_of(cp_.rank());
  if (inputs) {
    lb.inputs.resize(static_cast<size_t>(B * lb.T));
    ch.take_local(inputs, lb.inputs.data(), B, cp_.rank());
  }
  if (targets) {
    lb.targets.resize(static_cast<size_t>(B * lb.T));
    ch.take_local(targets, lb.targets.data(), B, cp_.rank());
  }
  return lb;
}

void Transformer::check_batch(const int32_t* inputs, int64_t B, int64_t T) const {
  PX_CHECK(whole() && stage_.chunks[0].first == 0 && stage_.chunks[0].count == cfg_.n_layers,
           "this call needs the whole model, not a pipeline stage");
  PX_CHECK(B > 0 && T > 0, "empty batch (B {}, T {})", B, T);
  PX_CHECK(T <= cfg_.max_positions || !cfg_.uses_learned_positions(),
           "sequence length {} exceeds max_positions {}", T, cfg_.max_positions);
  if (cp_.active()) check_cp_divides(T, cp_.size());
  tp_local_rows(tp_, B * T / cp_.size());  // throws when sequence parallel cannot split the rows
  for (int64_t i = 0; i < B * T; ++i)
    PX_CHECK(inputs[i] >= 0 && inputs[i] < cfg_.vocab_size,
             "input token {} at position {} is outside the vocabulary ({})", inputs[i], i,
             cfg_.vocab_size);
}

Transformer::Forward Transformer::run_forward(const LayerContext& c, const int32_t* inputs) {
  Forward f;
  const int64_t L = cfg_.n_layers;
  const int64_t rows = tp_local_rows(tp_, c.N());
  f.xs.reserve(L + 1);
  f.xs.push_back(c.activation({rows, cfg_.hidden}));
  before_unit(UnitPass::Forward, static_cast<int>(L + 1));
  embed_.forward(c, f.xs[0].data<float>(), inputs);
  tap_model_op(c, "embedding", -1, f.xs[0].data<float>());
  for (int64_t l = 0; l < L; ++l) {
    f.xs.push_back(c.activation({rows, cfg_.hidden}));
    before_unit(UnitPass::Forward, static_cast<int>(L - l));
    f.blocks.push_back(blocks_[l].forward(c, f.xs[l + 1].data<float>(), f.xs[l].data<float>()));
  }
  before_unit(UnitPass::Forward, 0);
  f.final_norm = final_norm_.forward(stream_context(c, rows), f.xs[L].data<float>());
  tap_model_op(c, "final_norm", static_cast<int>(L), f.final_norm.out.data<float>());
  return f;
}

Tensor Transformer::head_input(const LayerContext& c, const Forward& f) const {
  return head_input(c, f.final_norm);
}

Tensor Transformer::head_input(const LayerContext& c, const Norm::Saved& final_norm) const {
  if (!tp_.sp()) return final_norm.out;
  Tensor full = c.workspace({c.N(), cfg_.hidden});
  enter_tp_region(tp_, full.data<float>(), final_norm.out.data<float>(), c.N(), cfg_.hidden);
  return full;
}

LossSum Transformer::forward_backward(const int32_t* inputs, const int32_t* targets, int64_t B,
                                      int64_t T, double grad_scale, const DropoutKey& dropout) {
  check_batch(inputs, B, T);
  const LocalBatch lb = local_batch(inputs, targets, B, T);
  inputs = lb.inputs.data();
  targets = lb.targets.data();
  LayerContext c = context(B, lb.T, lb.pos);
  lb.attach(c);
  c.dropout_seed = dropout.seed;
  c.sample_offset = dropout.sample_offset;
  c.grad_scale = grad_scale;
  c.moe_stats = &moe_stats_;
  Forward f = run_forward(c, inputs);
  const int64_t L = cfg_.n_layers;
  const int64_t rows = tp_local_rows(tp_, c.N());
  const LayerContext cs = stream_context(c, rows);
  auto unit_backward = [&](int segment, auto&& body) {
    before_unit(UnitPass::Backward, segment);
    partial_grads_.before_backward(params_, segment);
    body();
    partial_grads_.after_backward(params_, segment);
    grad_ready(segment);
  };

  Tensor dx = c.workspace({rows, cfg_.hidden});
  LossSum loss;
  unit_backward(0, [&] {
    Tensor dnorm = c.workspace({rows, cfg_.hidden});
    Tensor x = head_input(c, f);
    if (!tp_.active()) {
      loss = head_.loss_and_grad(c, dnorm.data<float>(), x.data<float>(), targets, grad_scale);
    } else {  // the head's dx is this rank's vocab shard's part: sum it over tp
      Tensor dfull = c.workspace({c.N(), cfg_.hidden});
      loss = head_.loss_and_grad(c, dfull.data<float>(), x.data<float>(), targets, grad_scale);
      x = Tensor();
      enter_tp_region_backward(tp_, dnorm.data<float>(), dfull.data<float>(), c.N(),
                               cfg_.hidden);
    }
    final_norm_.backward(cs, dx.data<float>(), dnorm.data<float>(), f.xs[L].data<float>(),
                         f.final_norm);
    f.final_norm = {};
    f.xs[L] = {};
  });
  for (int64_t l = L - 1; l >= 0; --l) {
    Tensor dprev = c.workspace({rows, cfg_.hidden});
    unit_backward(static_cast<int>(L - l), [&] {
      blocks_[l].backward(c, dprev.data<float>(), dx.data<float>(), f.xs[l].data<float>(),
                          f.blocks[l]);
      f.blocks[l] = {};  // activations of this block are no longer needed
      f.xs[l + 1] = {};
    });
    dx = dprev;
  }
  unit_backward(static_cast<int>(L + 1), [&] { embed_.backward(c, dx.data<float>(), inputs); });
  return loss;
}

LossSum Transformer::forward_loss(const int32_t* inputs, const int32_t* targets, int64_t B,
                                  int64_t T) {
  check_batch(inputs, B, T);
  const LocalBatch lb = local_batch(inputs, targets, B, T);
  LayerContext c = context(B, lb.T, lb.pos);
  lb.attach(c);
  Forward f = run_forward(c, lb.inputs.data());
  LossSum l = head_.loss(c, head_input(c, f).data<float>(), lb.targets.data());
  if (cp_.active()) {  // every cp rank reports the whole sequence's loss
    double sc[2] = {l.sum, static_cast<double>(l.count)};
    cp_.comm->all_reduce(sc, 2, DType::F64, comm::ReduceOp::Sum);
    l.sum = sc[0];
    l.count = static_cast<int64_t>(sc[1]);
  }
  return l;
}

Tensor Transformer::logits(const int32_t* inputs, int64_t B, int64_t T) {
  PX_CHECK(!cp_.active(), "full logits run without context parallelism (cp {})", cp_.size());
  check_batch(inputs, B, T);
  const LocalBatch lb = local_batch(nullptr, nullptr, B, T, inputs);
  LayerContext c = context(B, T, lb.pos);
  lb.attach(c);
  Forward f = run_forward(c, inputs);
  Tensor x = head_input(c, f);
  Tensor out = Tensor::zeros(alloc_, {B, T, cfg_.vocab_size}, DType::F32, MemTag::Activation);
  full_logits(c, out.data<float>(), x.data<float>());
  return out;
}

void Transformer::full_logits(const LayerContext& c, float* out, const float* x) const {
  const VocabShard& vs = head_.vocab_shard();
  if (!tp_.active()) {
    head_.logits(c, out, x);
    return;
  }
  // Each rank's shard of the padded vocabulary, gathered along the last
  // dimension; the padded columns are dropped.
  const int64_t N = c.N();
  Tensor local = c.workspace({N, vs.rows});
  head_.logits(c, local.data<float>(), x);
  Tensor full = c.workspace({N, vs.padded});
  gather_from_tp_region(tp_, full.data<float>(), local.data<float>(), N, vs.rows);
  for (int64_t i = 0; i < N; ++i)
    ops::copy(c.stream(), out + i * vs.vocab, full.data<float>() + i * vs.padded,
              static_cast<size_t>(vs.vocab) * sizeof(float));
}

}  // namespace parallm
