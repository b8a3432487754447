// DraftModel: a smaller model of the target's vocabulary proposing tokens
// for speculative decoding (Leviathan et al. 2023; vLLM's draft-model
// speculator). It runs k batched forwards of one token per sequence over a
// paged KV cache of its own. Before each proposal it compares the tokens it
// cached with the sequence's tokens now, so whatever the target rejected
// (or a preemption recomputed) is forgotten and only the missing tail is
// fed again. Invariant: a sequence's cached positions hold exactly the
// first `fed` tokens of its current context.
#pragma once
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "infer/sampler.h"
#include "model/kv_cache/block_pool.h"
#include "model/kv_cache/kv_dtype.h"
#include "model/transformer.h"

namespace parallm {

// Throws, naming both sizes, unless the draft's vocabulary is the target's
// (its ids are the target's ids only then).
void check_draft_vocab(int64_t target_vocab, int64_t draft_vocab);

class DraftModel {
 public:
  // draft: a whole model (one process, no tp or pp); its cache holds
  // num_blocks blocks of block_size positions.
  DraftModel(Transformer& draft, int64_t num_blocks, int64_t block_size,
             KvDType kv = KvDType::F32);

  struct Request {
    uint64_t id = 0;  // the sequence (any key; the same across steps)
    std::span<const int32_t> prompt, generated;
    int64_t k = 0;  // tokens wanted
    // Greedy: the argmax (after penalties); sampled: a draw from the
    // transformed draft distribution q, which the Proposal keeps.
    const Sampler* sampler = nullptr;
    int64_t draw_id = 0;  // the sequence's key for draws (Sampler::draw_draft)
  };
  struct Proposal {
    std::vector<int32_t> tokens;        // up to k (fewer near the draft's context or out of blocks)
    std::vector<std::vector<float>> q;  // sampled: each token's distribution (V)
  };
  // One proposal per request, in order. A sequence without blocks to spare
  // proposes nothing this time.
  std::vector<Proposal> propose(const std::vector<Request>& reqs);
  // The sequence left: its blocks return to the pool.
  void release(uint64_t id);
  int64_t vocab_size() const;

 private:
  struct Seq {
    std::vector<int32_t> fed;  // the tokens at its cached positions
    std::vector<BlockId> blocks;
  };
  // Grows s's table to cover `positions`; false (nothing taken) when the
  // pool has too few blocks.
  bool reserve(Seq& s, int64_t positions);

  Transformer& draft_;
  BlockPool pool_;
  PagedKvCache cache_;
  Allocator host_;  // the logits the sampler reads, copied from a device
  std::unordered_map<uint64_t, Seq> seqs_;
};

}  // namespace parallm
