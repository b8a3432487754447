// stage_forward (see stage_forward.h).
#include "infer/stage_forward.h"

namespace parallm {

Tensor stage_forward(Transformer& model, const std::vector<int32_t>& tokens,
                     const std::vector<PagedSpan>& spans, PagedKvCache& cache,
                     comm::Communicator* pp) {
  if (!pp) return model.forward_cached(tokens.data(), spans, cache);
  const int64_t N = static_cast<int64_t>(tokens.size()), C = model.config().hidden;
  const size_t n = static_cast<size_t>(N * C);
  Tensor hidden;  // on the model's device, as the stage before sent it
  if (!model.stage().embedding) {
    hidden = Tensor::zeros(model.allocator(), {N, C}, DType::F32, MemTag::Activation);
    pp->recv(hidden.data<float>(), n, DType::F32, pp->rank() - 1);
  }
  Tensor out = model.forward_cached_stage(
      tokens.data(), hidden.defined() ? hidden.data<float>() : nullptr, spans, cache);
  if (!model.stage().head) pp->send(out.data<float>(), n, DType::F32, pp->rank() + 1);
  return out;
}

Tensor on_host(const Tensor& t, Allocator& host) {
  if (!t.defined() || t.device() == Device::CPU) return t;
  Tensor h = Tensor::zeros(host, t.shape(), t.dtype(), MemTag::Activation);
  h.copy_from(t);
  return h;
}

}  // namespace parallm
