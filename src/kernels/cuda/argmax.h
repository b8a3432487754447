// Greedy decoding's choice on the GPU: the index of each row's largest
// logit, the lowest index among equal maxima (torch.argmax and the CPU
// sampler pick the first), so only B integers cross to the host per step
// instead of B x V logits. NaN never wins; a row of NaN gives 0.
#pragma once
#include <cuda_runtime_api.h>

#include <cstdint>

namespace parallm::cuda {

// out (N) = argmax over each row of x (N, V), x fp32 on the device.
void argmax_rows(int32_t* out, const float* x, int64_t N, int64_t V, cudaStream_t s);

}  // namespace parallm::cuda
