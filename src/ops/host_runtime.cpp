#include "ops/host_runtime.h"

#include "kernels/cpu/cpu_isa.h"
#include "kernels/cpu/threads.h"

namespace parallm::ops {

void set_host_threads(int n) { cpu::set_num_threads(n); }

int host_threads() { return cpu::num_threads(); }

void init_host_isa() { static_cast<void>(cpu::cpu_isa()); }

std::string host_isa_summary() { return cpu::cpu_isa_summary(); }

}  // namespace parallm::ops
