// The wait at a blocking collective for the rank that arrives last. Ranks
// that start a stretch of work together do not finish it together: a core
// is interrupted, shares a cache or memory controller with another tenant,
// runs a little slower for a while. A collective after that work starts
// when the last rank arrives, so on the critical path every blocking
// collective costs, beyond its transfer, the latest arrival over the mean.
// Model: each rank's arrival after work of length T spreads like a random
// walk, a normal of standard deviation jitter x sqrt(T) (independent
// increments, the usual model of timing noise); the latest of n such ranks
// is expected E[max of n standard normals] standard deviations after the
// mean. `parallm calibrate` measures jitter (an all-reduce after a GEMM of
// 2 to 50 ms against the same all-reduce back to back); a built-in GPU
// profile has none (its published figures are step-level already).
#pragma once
#include <vector>

namespace parallm {

// E[max of n independent standard normals]: 0 for n = 1, 0.5642 for 2,
// 1.0294 for 4, 1.4236 for 8.
double expected_max_std_normal(int n);

// Seconds a collective of n ranks waits for the last of them after work_s
// seconds of work, with jitter in seconds^(1/2).
double arrival_wait_s(double jitter, double work_s, int n);

// The jitter that best fits measured waits (seconds) after works (seconds)
// of n ranks, least squares through the origin in sqrt(work); 0 when the
// waits are not positive on the whole.
double fit_arrival_jitter(const std::vector<double>& works, const std::vector<double>& waits,
                          int n);

}  // namespace parallm
