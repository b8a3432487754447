// Causal self-attention with grouped-query heads, flash-attention style: the
// forward keeps only the output and the per-row log-sum-exp of the scores;
// the backward recomputes the probabilities. No (B, H, Tq, Tk) tensor outlives
// a call (per-(b, h) tiles live in a thread-local workspace).
// Keys may come from other positions than queries (ring attention, KV cache):
// key j is visible to query i iff k_pos0 + j <= q_pos0 + i (when causal).
// Packed documents (--reset-attention-mask): with doc_start set, key j is
// also hidden unless it lies in query i's document, i.e. doc_start(b, q_pos0
// + i) <= k_pos0 + j; tiles compute only the key range their rows can see.
// Sliding window (Mistral): with window > 0, key j is also hidden when k_pos0
// + j <= q_pos0 + i - window (a query sees itself and the window - 1 keys
// before it); positions are global, so ring steps mask the same way.
// Optional dropout on the probabilities: the mask of (sample, head, query pos,
// key pos) is a pure function of global indices (counter RNG), never of the
// layout, and is regenerated in backward; lse stays the un-dropped statistic.
#pragma once
#include <cstdint>
#include <functional>

namespace parallm::cpu {

struct AttnDims {
  int64_t B;
  int64_t Tq;
  int64_t Tk;
  int64_t Hq;   // query heads
  int64_t Hkv;  // key/value heads; Hq % Hkv == 0, query head h uses kv head h / (Hq / Hkv)
  int64_t D;    // head dim
  int64_t q_pos0 = 0;
  int64_t k_pos0 = 0;
  bool causal = true;
  // Document mask (null: none). doc_start[b * doc_ld + p] is the position
  // where the document holding position p of batch row b begins; indexed by
  // the same positions as q_pos0 (the whole sequence under context
  // parallelism), non-decreasing along a row.
  const int64_t* doc_start = nullptr;
  int64_t doc_ld = 0;
  // Sliding window (0: none): query position p sees key positions
  // p - window + 1 .. p (and no earlier document). Needs causal.
  int64_t window = 0;
  // Dropout on P: keep with probability 1 - dropout_p, kept values scaled by
  // 1/(1 - dropout_p). head0 / sample0: global index of local head 0 / batch
  // row 0 (tp-split heads, data-parallel or accumulated micro-batches).
  double dropout_p = 0.0;
  uint64_t dropout_key = 0;
  int64_t head0 = 0;
  int64_t sample0 = 0;
  // Called on the calling thread between query blocks (null: never). Ring
  // attention polls its transfers here: without a progress thread MPI moves
  // a message's bytes only inside some MPI call on this rank, and one call
  // of a long chunk pair would otherwise leave a peer waiting for seconds.
  const std::function<void()>* progress = nullptr;
  bool dropout() const { return dropout_p > 0.0 && dropout_key != 0; }
};

// The dropout multiplier (0 or 1/(1-p)) of global (sample, head, query
// position, key position); exposed so tests can build a reference.
double attention_dropout_factor(const AttnDims& d, int64_t sample, int64_t head, int64_t qpos,
                                int64_t kpos);

// q: (B, Tq, Hq, D); k, v: (B, Tk, Hkv, D); out: (B, Tq, Hq, D); lse: (B, Hq, Tq).
// scale multiplies q.k (normally 1/sqrt(D)). Rows with no visible key get out=0, lse=-inf.
template <class T>
void attention_forward(T* out, T* lse, const T* q, const T* k, const T* v, const AttnDims& d,
                       double scale);

// dq, dk, dv accumulate (+=). Needs out and lse from the forward.
template <class T>
void attention_backward(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                        const T* out, const T* lse, const AttnDims& d, double scale);

// How the backward shares work between threads. kByKvHead: one task per
// (b, kv head) owns its dk/dv rows and its query heads' dq rows (5 GEMMs per
// tile). kTwoPass: dk/dv by (b, kv head, key block), then dq by (b, head,
// query block); recomputes 2 of the 5 GEMMs but keeps every thread busy when
// B * Hkv is small. Auto picks by shape and thread count. Both are
// deterministic and race-free; they agree to rounding.
enum class AttnBwdSplit { Auto, ByKvHead, TwoPass };

// The split Auto picks for d on this thread count. Each (batch entry, kv
// head) gets the same sums under either split whether or not other entries
// and heads share the call, so a caller that cuts one call into such parts
// passes the whole call's choice to every part and gets the same result.
AttnBwdSplit attention_backward_auto_split(const AttnDims& d);

template <class T>
void attention_backward_split(T* dq, T* dk, T* dv, const T* dout, const T* q, const T* k,
                              const T* v, const T* out, const T* lse, const AttnDims& d,
                              double scale, AttnBwdSplit split);

}  // namespace parallm::cpu
