// How context parallelism cuts one sequence (Megatron's causal load
// balancing): T tokens are 2 x cp chunks of T / (2 cp); cp rank r holds
// chunks r and 2cp-1-r, in that order, so under a causal mask every rank has
// the same attention work (an early chunk sees few keys, a late one many).
// Without balancing (kept for the FLOPs comparison) rank r holds 2r, 2r+1.
// Invariant: a rank's local rows are always (B, 2 x chunk_len), chunk by
// chunk, and every position array here is global.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

namespace parallm {

struct CpChunks {
  int64_t T = 0;  // full sequence length
  int cp = 1;
  bool balanced = true;

  int64_t chunk_len() const { return T / (2 * cp); }
  int64_t local_len() const { return 2 * chunk_len(); }
  // Global chunk indices cp rank r holds, in local order.
  std::array<int, 2> chunks_of(int r) const;
  // First global position of each chunk rank r holds.
  std::vector<int64_t> pos0_of(int r) const;
  // Global positions of rank r's local tokens, (local_len()).
  std::vector<int64_t> positions_of(int r) const;
  // local (B, local_len()) <- rank r's tokens of full (B, T).
  void take_local(const int32_t* full, int32_t* local, int64_t B, int r) const;
};

// Throws naming both values unless 2 x cp divides the sequence length.
void check_cp_divides(int64_t seq_len, int cp);
// T must divide (check_cp_divides).
CpChunks cp_chunks(int64_t T, int cp, bool balanced = true);

// Exact number of causal (query, key) pairs between a query chunk at
// positions [q0, q0 + n) and a key chunk at [k0, k0 + n): key visible iff
// kpos <= qpos. The attention work of one (batch row, head), in pairs.
int64_t causal_pairs(int64_t q0, int64_t k0, int64_t n);

}  // namespace parallm
