#include "parallel/context/cp_chunks.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"

namespace parallm {

void check_cp_divides(int64_t seq_len, int cp) {
  PX_CHECK(cp >= 1, "context parallel size must be positive, got {}", cp);
  PX_CHECK(seq_len > 0 && seq_len % (2 * cp) == 0,
           "sequence length ({}) is not divisible by 2 x cp ({}): context parallelism cuts it "
           "into 2 x cp equal chunks (causal load balancing); choose a seq_len that is a "
           "multiple of {}",
           seq_len, 2 * cp, 2 * cp);
}

CpChunks cp_chunks(int64_t T, int cp, bool balanced) {
  check_cp_divides(T, cp);
  return CpChunks{.T = T, .cp = cp, .balanced = balanced};
}

std::array<int, 2> CpChunks::chunks_of(int r) const {
  if (balanced) return {r, 2 * cp - 1 - r};
  return {2 * r, 2 * r + 1};
}

std::vector<int64_t> CpChunks::pos0_of(int r) const {
  const auto ch = chunks_of(r);
  return {ch[0] * chunk_len(), ch[1] * chunk_len()};
}

std::vector<int64_t> CpChunks::positions_of(int r) const {
  std::vector<int64_t> pos;
  pos.reserve(static_cast<size_t>(local_len()));
  for (int64_t p0 : pos0_of(r))
    for (int64_t i = 0; i < chunk_len(); ++i) pos.push_back(p0 + i);
  return pos;
}

void CpChunks::take_local(const int32_t* full, int32_t* local, int64_t B, int r) const {
  const int64_t n = chunk_len();
  const auto p0 = pos0_of(r);
  for (int64_t b = 0; b < B; ++b)
    for (int c = 0; c < 2; ++c)
      std::memcpy(local + b * 2 * n + c * n, full + b * T + p0[c],
                  static_cast<size_t>(n) * sizeof(int32_t));
}

int64_t causal_pairs(int64_t q0, int64_t k0, int64_t n) {
  // Query q0 + i sees keys k0 .. min(q0 + i, k0 + n - 1): clamp(q0 + i - k0 + 1, 0, n) of them.
  int64_t pairs = 0;
  for (int64_t i = 0; i < n; ++i) pairs += std::clamp<int64_t>(q0 + i - k0 + 1, 0, n);
  return pairs;
}

}  // namespace parallm
