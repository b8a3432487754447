// Error checks for CUDA runtime, cuBLAS and NCCL calls: a failed call throws
// parallm::Error naming the call, the error string and the source line, so a
// GPU fault reads like every other parallm error. Header free of fmt (nvcc).
#pragma once
#include <cuda_runtime_api.h>

namespace parallm::cuda {

[[noreturn]] void fail_call(const char* api, int code, const char* what, const char* call,
                            const char* file, int line);
void check_runtime(cudaError_t e, const char* call, const char* file, int line);
// After a kernel launch: reports launch-configuration errors at once.
void check_launch(const char* kernel, const char* file, int line);

}  // namespace parallm::cuda

#define PX_CUDA(call) ::parallm::cuda::check_runtime((call), #call, __FILE__, __LINE__)
#define PX_CUDA_LAUNCH(name) ::parallm::cuda::check_launch(name, __FILE__, __LINE__)
