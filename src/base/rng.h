// Counter-based random numbers: a value depends only on (seed, stream key,
// element index), never on call order. Parameters initialised this way are
// identical however they are sharded (DESIGN principle 1).
#pragma once
#include <cstdint>
#include <string_view>

namespace parallm {

// SplitMix64 finaliser: a bijective 64-bit mix with good avalanche.
inline uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// FNV-1a of a name, so a stream key is stable across builds and platforms.
inline uint64_t hash_name(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

inline uint64_t stream_key(uint64_t seed, std::string_view name) {
  return mix64(seed ^ mix64(hash_name(name)));
}

// Uniform in (0, 1), 53-bit resolution; never returns 0.
inline double uniform_at(uint64_t key, uint64_t index, uint64_t lane = 0) {
  uint64_t r = mix64(key ^ mix64(index * 2 + lane + 0x632BE59BD9B4E019ull));
  return (static_cast<double>(r >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

// Standard normal by Box-Muller on two counter-derived uniforms.
double normal_at(uint64_t key, uint64_t index);

}  // namespace parallm
