#include "kernels/cpu/threads.h"

#include <cblas.h>
#include <omp.h>

namespace parallm::cpu {

void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
  openblas_set_num_threads(omp_get_max_threads());
}

int num_threads() { return omp_get_max_threads(); }

}  // namespace parallm::cpu
