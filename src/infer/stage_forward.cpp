// stage_forward (see stage_forward.h).
#include "infer/stage_forward.h"

namespace parallm {

Tensor stage_forward(Transformer& model, const std::vector<int32_t>& tokens,
                     const std::vector<PagedSpan>& spans, PagedKvCache& cache,
                     comm::Communicator* pp) {
  if (!pp) return model.forward_cached(tokens.data(), spans, cache);
  const size_t n = tokens.size() * static_cast<size_t>(model.config().hidden);
  std::vector<float> hidden;
  if (!model.stage().embedding) {
    hidden.resize(n);
    pp->recv(hidden.data(), n, DType::F32, pp->rank() - 1);
  }
  Tensor out = model.forward_cached_stage(tokens.data(), hidden.data(), spans, cache);
  if (!model.stage().head) pp->send(out.data<float>(), n, DType::F32, pp->rank() + 1);
  return out;
}

}  // namespace parallm
