// Thread configuration for the CPU backend: OpenMP regions and the BLAS
// library's own pool use the same count, so they never oversubscribe cores.
#pragma once

namespace parallm::cpu {

// n <= 0 keeps the OpenMP default (OMP_NUM_THREADS or the core count).
void set_num_threads(int n);
int num_threads();

}  // namespace parallm::cpu
