// Transformer as one pipeline stage: per-chunk, per-micro-batch forward and
// backward (and the zero-bubble B/W halves), the state between them keyed by
// (micro-batch, chunk). The arithmetic is forward_backward's, cut at chunk
// boundaries, so a pipeline of stages adds the same numbers per micro-batch
// as the one-process model (the tied table's two halves are summed later).
#include <numeric>

#include "model/transformer.h"
#include "parallel/tensor/mappings.h"

namespace parallm {

struct Transformer::ChunkState {
  std::vector<int32_t> inputs, targets;
  std::vector<int64_t> pos;
  int64_t B = 0, T = 0;
  LocalBatch docs;  // packed documents: starts and position ids only
  double grad_scale = 0.0;
  DropoutKey dropout;
  std::vector<Tensor> xs;  // xs[i]: input of the chunk's block i; head chunk: + final norm input
  std::vector<Block::Saved> blocks;
  Norm::Saved final_norm;
  WeightGradQueue weight_grads;
  // mm, rc: the model's GEMM precision and recomputation (set_compute).
  // adapters: the LoRA adapters when ps is a frozen base (else null).
  LayerContext context(Allocator& alloc, const ParameterSet& ps, const ParameterSet* adapters,
                       MatmulPrecision* mm, Recompute rc, OpTap* tap, const FaultHooks* faults,
                       const ExpertBias* expert_bias) const {
    LayerContext c{alloc, ps, B, T, pos.data()};
    c.expert_bias = expert_bias;
    docs.attach(c);
    c.adapters = adapters;
    c.dropout_seed = dropout.seed;
    c.sample_offset = dropout.sample_offset;
    c.grad_scale = grad_scale;
    c.matmul = mm;
    c.recompute = rc;
    c.tap = tap;
    c.faults = faults;
    return c;
  }
};

Transformer::~Transformer() = default;

// T: the full sequence; this rank's rows are its cp share, split over tp under sp.
int64_t Transformer::stream_rows(int64_t B, int64_t T) const {
  return tp_local_rows(tp_, B * T / cp_.size());
}

void Transformer::stage_unit_backward(int segment, const std::function<void()>& body) {
  before_unit(UnitPass::Backward, segment);
  partial_grads_.before_backward(params_, segment);
  body();
  partial_grads_.after_backward(params_, segment);
}

Tensor Transformer::chunk_forward(int chunk, int micro_batch, const StageBatch& b, Tensor in) {
  PX_CHECK(chunk >= 0 && chunk < num_chunks(), "chunk {} is not on this stage ({} chunks)", chunk,
           num_chunks());
  const auto key = std::make_pair(micro_batch, chunk);
  PX_CHECK(inflight_.count(key) == 0, "micro-batch {} chunk {} ran forward twice", micro_batch,
           chunk);
  const bool embed = stage_.embedding && chunk == 0;
  const bool head = stage_.head && chunk + 1 == num_chunks();
  auto st = std::make_shared<ChunkState>();
  LocalBatch lb =
      local_batch(embed ? b.inputs : nullptr, head ? b.targets : nullptr, b.B, b.T, b.inputs);
  st->B = b.B;
  st->T = lb.T;  // this rank's tokens per row (its cp chunks)
  st->grad_scale = b.grad_scale;
  st->dropout = b.dropout;
  st->pos = std::move(lb.pos);
  const int64_t rows = stream_rows(b.B, b.T), C = cfg_.hidden;
  st->inputs = std::move(lb.inputs);
  st->targets = std::move(lb.targets);
  st->docs.doc_start = std::move(lb.doc_start);
  st->docs.position_ids = std::move(lb.position_ids);
  st->docs.full_T = lb.full_T;
  const LayerContext c = st->context(alloc_, base_params(), lora_adapters(), matmul_, recompute_,
                                     tap_, faults_, &expert_bias_);
  if (embed) {
    st->xs.push_back(c.activation({rows, C}));
    before_unit(UnitPass::Forward, embed_segment_);
    embed_.forward(c, st->xs[0].data<float>(), st->inputs.data());
    tap_model_op(c, "embedding", -1, st->xs[0].data<float>());
  } else {
    PX_CHECK(in.defined() && in.numel() == rows * C, "chunk {} expects a ({}, {}) input activation",
             chunk, rows, C);
    st->xs.push_back(std::move(in));
  }
  const LayerRange r = stage_.chunks[chunk];
  for (int i = 0; i < r.count; ++i) {
    const int bi = chunk_first_block_[chunk] + i;
    Tensor out = c.activation({rows, C});
    before_unit(UnitPass::Forward, block_segment_[bi]);
    st->blocks.push_back(blocks_[bi].forward(c, out.data<float>(), st->xs.back().data<float>()));
    st->xs.push_back(std::move(out));
  }
  Tensor result;
  if (head) {
    before_unit(UnitPass::Forward, tail_segment_);
    st->final_norm = final_norm_.forward(stream_context(c, rows), st->xs.back().data<float>());
    tap_model_op(c, "final_norm", static_cast<int>(cfg_.n_layers),
                 st->final_norm.out.data<float>());
  } else {  // the output goes to the next stage; backward needs only block inputs
    result = std::move(st->xs.back());
    st->xs.pop_back();
  }
  inflight_[key] = std::move(st);
  return result;
}

Tensor Transformer::chunk_backward(int chunk, int micro_batch, const Tensor& dout,
                                   bool defer_weights, LossSum* loss) {
  auto it = inflight_.find({micro_batch, chunk});
  PX_CHECK(it != inflight_.end(), "backward of micro-batch {} chunk {} before its forward",
           micro_batch, chunk);
  ChunkState& st = *it->second;
  const bool embed = stage_.embedding && chunk == 0;
  const bool head = stage_.head && chunk + 1 == num_chunks();
  LayerContext c = st.context(alloc_, base_params(), lora_adapters(), matmul_, recompute_, tap_,
                              faults_, &expert_bias_);
  c.moe_stats = &moe_stats_;
  if (defer_weights) c.weight_grads = &st.weight_grads;
  const int64_t rows = tp_local_rows(tp_, st.B * st.T), C = cfg_.hidden;
  const LayerContext cs = stream_context(c, rows);
  Tensor dx;
  if (head) {
    dx = c.workspace({rows, C});
    stage_unit_backward(tail_segment_, [&] {
      Tensor dnorm = c.workspace({rows, C});
      Tensor x = head_input(c, st.final_norm);
      LossSum l;
      if (!tp_.active()) {
        l = head_.loss_and_grad(c, dnorm.data<float>(), x.data<float>(), st.targets.data(),
                                st.grad_scale);
      } else {  // the head's dx is this rank's vocab shard's part: sum it over tp
        Tensor dfull = c.workspace({c.N(), C});
        l = head_.loss_and_grad(c, dfull.data<float>(), x.data<float>(), st.targets.data(),
                                st.grad_scale);
        x = Tensor();
        enter_tp_region_backward(tp_, dnorm.data<float>(), dfull.data<float>(), c.N(), C);
      }
      if (loss != nullptr) *loss = l;
      final_norm_.backward(cs, dx.data<float>(), dnorm.data<float>(), st.xs.back().data<float>(),
                           st.final_norm);
      st.final_norm = {};
      st.xs.pop_back();
    });
  } else {
    PX_CHECK(dout.defined() && dout.numel() == rows * C,
             "chunk {} expects a ({}, {}) output gradient", chunk, rows, C);
    dx = dout;
  }
  const LayerRange r = stage_.chunks[chunk];
  for (int i = r.count - 1; i >= 0; --i) {
    const int bi = chunk_first_block_[chunk] + i;
    Tensor dprev = c.workspace({rows, C});
    stage_unit_backward(block_segment_[bi], [&] {
      blocks_[bi].backward(c, dprev.data<float>(), dx.data<float>(), st.xs[i].data<float>(),
                           st.blocks[i]);
      st.blocks[i] = {};
      st.xs[i] = {};
    });
    dx = std::move(dprev);
  }
  if (embed) {
    stage_unit_backward(embed_segment_,
                        [&] { embed_.backward(c, dx.data<float>(), st.inputs.data()); });
    dx = Tensor();
  }
  if (!defer_weights || st.weight_grads.empty()) {
    inflight_.erase(it);
  } else {  // only the deferred dW work (with its own copies) stays
    st.xs.clear();
    st.blocks.clear();
  }
  return dx;
}

LossSum Transformer::chunk_loss(int chunk, int micro_batch) {
  auto it = inflight_.find({micro_batch, chunk});
  PX_CHECK(it != inflight_.end() && stage_.head && chunk + 1 == num_chunks(),
           "loss of micro-batch {} chunk {} without its forward on the head chunk", micro_batch,
           chunk);
  const ChunkState& st = *it->second;
  const LayerContext c = st.context(alloc_, base_params(), lora_adapters(), matmul_, recompute_,
                                    tap_, faults_, &expert_bias_);
  const LossSum l = head_.loss(c, head_input(c, st.final_norm).data<float>(), st.targets.data());
  inflight_.erase(it);
  return l;
}

void Transformer::drop_chunk(int chunk, int micro_batch) { inflight_.erase({micro_batch, chunk}); }

void Transformer::chunk_backward_weights(int chunk, int micro_batch) {
  auto it = inflight_.find({micro_batch, chunk});
  if (it == inflight_.end()) return;  // nothing was deferred (e.g. an embedding-only chunk)
  it->second->weight_grads.run();
  inflight_.erase(it);
}

}  // namespace parallm
