// StepRunner (see step_runner.h). A step travels as one int64 header
// {kind, tokens, spans, block entries} and one int64 payload: the tokens,
// then (pos0, count, blocks) per span, then the block ids.
#include "infer/serve/step_runner.h"

#include "base/error.h"
#include "infer/generator.h"
#include "infer/serve/pipeline_forward.h"
#include "infer/stage_forward.h"

namespace parallm::serve {
namespace {
enum : int64_t { kStep = 1, kStop = 2 };
}

StepRunner::StepRunner(Transformer& model, PagedKvCache& cache, comm::Communicator* world,
                       comm::Communicator* pp, int micro_batches, int64_t min_tokens)
    : model_(model),
      cache_(cache),
      world_(world),
      pp_(pp),
      rank_(world ? world->rank() : 0),
      micro_batches_(micro_batches),
      min_tokens_(min_tokens) {
  PX_CHECK(micro_batches >= 1, "a step runs as at least one micro-batch, got {}", micro_batches);
  if (!world_ || world_->size() == 1) return;
  // Everyone learns which world rank samples (the last stage's tp rank 0).
  const int32_t mine = is_sampling_rank(model_) ? rank_ : 0;
  int32_t who = 0;
  world_->all_reduce(&mine, &who, 1, DType::I32, comm::ReduceOp::Sum);
  sampler_ = who;
}

Tensor StepRunner::forward(const std::vector<int32_t>& tokens,
                           const std::vector<PagedSpan>& spans, const RowLoras* loras) {
  if (!pp_) return model_.forward_cached(tokens.data(), spans, cache_, loras);
  PX_CHECK(loras == nullptr, "LoRA adapters are not served under pipeline parallelism");
  return pipeline_forward(model_, tokens, spans,
                          split_micro_batches(spans, micro_batches_, min_tokens_), cache_, *pp_);
}

Tensor StepRunner::run(const std::vector<int32_t>& tokens, const std::vector<PagedSpan>& spans,
                       const RowLoras* loras) {
  PX_CHECK(leader(), "only rank 0 plans the server's steps");
  PX_CHECK(loras == nullptr || !world_ || world_->size() == 1,
           "LoRA adapters are served by one process only");
  if (world_ && world_->size() > 1) {
    int64_t entries = 0;
    for (const PagedSpan& s : spans) entries += static_cast<int64_t>(s.blocks.size());
    int64_t head[4] = {kStep, static_cast<int64_t>(tokens.size()),
                       static_cast<int64_t>(spans.size()), entries};
    world_->broadcast(head, 4, DType::I64, 0);
    std::vector<int64_t> body(tokens.begin(), tokens.end());
    for (const PagedSpan& s : spans) {
      body.push_back(s.pos0);
      body.push_back(s.count);
      body.push_back(static_cast<int64_t>(s.blocks.size()));
    }
    for (const PagedSpan& s : spans) body.insert(body.end(), s.blocks.begin(), s.blocks.end());
    world_->broadcast(body.data(), body.size(), DType::I64, 0);
  }
  Tensor logits = forward(tokens, spans, loras);
  if (sampler_ != 0) {
    const int64_t V = model_.config().vocab_size;
    logits = Tensor::zeros(model_.allocator(), {static_cast<int64_t>(spans.size()), V}, DType::F32,
                           MemTag::Activation);
    world_->recv(logits.data<float>(), spans.size() * static_cast<size_t>(V), DType::F32, sampler_);
  }
  return on_host(logits, host_);
}

void StepRunner::follow() {
  PX_CHECK(!leader(), "rank 0 plans the steps; it does not follow");
  for (;;) {
    int64_t head[4] = {0, 0, 0, 0};
    world_->broadcast(head, 4, DType::I64, 0);
    if (head[0] == kStop) return;
    PX_CHECK(head[0] == kStep, "server step message of unknown kind {}", head[0]);
    std::vector<int64_t> body(static_cast<size_t>(head[1] + 3 * head[2] + head[3]));
    world_->broadcast(body.data(), body.size(), DType::I64, 0);
    std::vector<int32_t> tokens(body.begin(), body.begin() + head[1]);
    std::vector<PagedSpan> spans(static_cast<size_t>(head[2]));
    size_t at = static_cast<size_t>(head[1]), ids = at + 3 * static_cast<size_t>(head[2]);
    for (PagedSpan& s : spans) {
      s.pos0 = body[at];
      s.count = body[at + 1];
      const size_t nb = static_cast<size_t>(body[at + 2]);
      s.blocks.assign(body.begin() + static_cast<std::ptrdiff_t>(ids),
                      body.begin() + static_cast<std::ptrdiff_t>(ids + nb));
      at += 3;
      ids += nb;
    }
    const Tensor logits = forward(tokens, spans);
    if (rank_ == sampler_)
      world_->send(logits.data<float>(), static_cast<size_t>(logits.numel()), DType::F32, 0);
  }
}

void StepRunner::stop() {
  if (stopped_ || !world_ || world_->size() == 1) return;
  stopped_ = true;
  int64_t head[4] = {kStop, 0, 0, 0};
  world_->broadcast(head, 4, DType::I64, 0);
}

}  // namespace parallm::serve
