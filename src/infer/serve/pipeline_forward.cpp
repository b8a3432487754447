// pipeline_forward (see pipeline_forward.h). Messages between two stages
// keep their order (same peer, same tag), so micro-batch m's rows are the
// m-th message; the receive of m+1 is posted before m runs so the stage
// before never waits on this one to ask for it.
#include "infer/serve/pipeline_forward.h"

#include "base/error.h"
#include "ops/copy.h"

namespace parallm::serve {
namespace {

struct Part {
  std::vector<int32_t> tokens;
  std::vector<PagedSpan> spans;
};

Part part_of(const std::vector<int32_t>& tokens, const std::vector<PagedSpan>& spans,
             const std::vector<int64_t>& first_token, const MicroBatch& m) {
  Part p;
  for (size_t i : m.spans) {
    const auto at = tokens.begin() + static_cast<std::ptrdiff_t>(first_token[i]);
    p.tokens.insert(p.tokens.end(), at, at + spans[i].count);
    p.spans.push_back(spans[i]);
  }
  return p;
}

}  // namespace

Tensor pipeline_forward(Transformer& model, const std::vector<int32_t>& tokens,
                        const std::vector<PagedSpan>& spans, const std::vector<MicroBatch>& groups,
                        PagedKvCache& cache, comm::Communicator& pp) {
  std::vector<int64_t> first_token(spans.size() + 1, 0);
  for (size_t i = 0; i < spans.size(); ++i) first_token[i + 1] = first_token[i] + spans[i].count;
  PX_CHECK(first_token.back() == static_cast<int64_t>(tokens.size()),
           "the step's spans cover {} tokens but it holds {}", first_token.back(), tokens.size());
  const bool first = model.stage().embedding, last = model.stage().head;
  const size_t C = static_cast<size_t>(model.config().hidden);
  const int64_t V = model.config().vocab_size;
  const int prev = pp.rank() - 1, next = pp.rank() + 1;

  // Hidden rows in (two buffers: the one being run, the one being received)
  // and out (kept until its send completes).
  // On the model's device.
  std::vector<Tensor> in(2);
  comm::Work receiving;
  auto post_recv = [&](size_t m) {
    Tensor& buf = in[m % 2];
    buf = Tensor::zeros(model.allocator(), {groups[m].tokens, static_cast<int64_t>(C)}, DType::F32,
                        MemTag::Activation);
    receiving =
        pp.recv_async(buf.data<float>(), static_cast<size_t>(buf.numel()), DType::F32, prev);
  };
  if (!first) post_recv(0);
  std::vector<Tensor> outs;
  std::vector<comm::Work> sending;
  Tensor logits;
  if (last && groups.size() > 1)
    logits = Tensor::zeros(model.allocator(), {static_cast<int64_t>(spans.size()), V}, DType::F32,
                           MemTag::Activation);
  for (size_t m = 0; m < groups.size(); ++m) {
    const Part p = part_of(tokens, spans, first_token, groups[m]);
    if (!first) {
      receiving.wait();
      if (m + 1 < groups.size()) post_recv(m + 1);
    }
    Tensor out = model.forward_cached_stage(
        p.tokens.data(), first ? nullptr : in[m % 2].data<float>(), p.spans, cache);
    if (!last) {
      sending.push_back(
          pp.send_async(out.data<float>(), static_cast<size_t>(out.numel()), DType::F32, next));
      outs.push_back(std::move(out));
    } else if (groups.size() == 1) {
      logits = std::move(out);
    } else {
      for (size_t r = 0; r < groups[m].spans.size(); ++r)
        ops::copy(cache.stream(),
                  logits.data<float>() + static_cast<int64_t>(groups[m].spans[r]) * V,
                  out.data<float>() + static_cast<int64_t>(r) * V,
                  static_cast<size_t>(V) * sizeof(float));
    }
  }
  for (comm::Work& w : sending) w.wait();
  return logits;
}

}  // namespace parallm::serve
