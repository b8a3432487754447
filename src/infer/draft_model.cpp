// DraftModel (see draft_model.h): catch up, then k - 1 one-token forwards.
#include "infer/draft_model.h"

#include <algorithm>

#include "base/error.h"
#include "infer/stage_forward.h"

namespace parallm {

void check_draft_vocab(int64_t target_vocab, int64_t draft_vocab) {
  PX_CHECK(target_vocab == draft_vocab,
           "the draft model's vocabulary ({} ids) differs from the target model's ({} ids): a "
           "draft must share the target's tokenizer and vocabulary",
           draft_vocab, target_vocab);
}

DraftModel::DraftModel(Transformer& draft, int64_t num_blocks, int64_t block_size, KvDType kv)
    : draft_(draft),
      pool_(num_blocks, block_size),
      cache_(draft.config(), draft.tp(), num_blocks, block_size, draft.allocator(),
             draft.cached_layers(), kv) {
  PX_CHECK(draft.whole() && !draft.tp().active(),
           "a draft model runs whole in one process (no tp or pp)");
}

int64_t DraftModel::vocab_size() const { return draft_.config().vocab_size; }

bool DraftModel::reserve(Seq& s, int64_t positions) {
  const int64_t need = (positions + pool_.block_size() - 1) / pool_.block_size();
  const int64_t more = need - static_cast<int64_t>(s.blocks.size());
  if (more <= 0) return true;
  if (more > pool_.free_blocks()) return false;
  for (int64_t i = 0; i < more; ++i) s.blocks.push_back(pool_.allocate());
  return true;
}

void DraftModel::release(uint64_t id) {
  const auto it = seqs_.find(id);
  if (it == seqs_.end()) return;
  for (BlockId b : it->second.blocks) pool_.release(b);
  seqs_.erase(it);
}

std::vector<DraftModel::Proposal> DraftModel::propose(const std::vector<Request>& reqs) {
  const int64_t V = draft_.config().vocab_size;
  std::vector<Proposal> out(reqs.size());
  // Per request: its context so far (prompt, generated, drafts) and how
  // many more tokens it wants; 0 once done.
  std::vector<std::vector<int32_t>> ctx(reqs.size());
  std::vector<int64_t> want(reqs.size(), 0);
  std::vector<int32_t> tokens;
  std::vector<PagedSpan> spans;
  std::vector<size_t> row_req;  // each span's request
  for (size_t i = 0; i < reqs.size(); ++i) {
    const Request& r = reqs[i];
    std::vector<int32_t>& c = ctx[i];
    c.assign(r.prompt.begin(), r.prompt.end());
    c.insert(c.end(), r.generated.begin(), r.generated.end());
    const int64_t L = static_cast<int64_t>(c.size());
    // The last draft is never fed, so positions up to L + k - 2 are: each
    // below the draft's context.
    const int64_t k = std::min(r.k, draft_.config().max_positions - L + 1);
    if (k <= 0 || L == 0) continue;
    Seq& s = seqs_[r.id];
    // Keep the cached prefix that still agrees with the context, less at
    // least the last token, whose logits the first draft needs.
    const auto mismatch = std::mismatch(s.fed.begin(), s.fed.end(), c.begin(), c.end());
    const int64_t agree = std::min<int64_t>(mismatch.first - s.fed.begin(), L - 1);
    s.fed.resize(static_cast<size_t>(agree));
    if (!reserve(s, L + k - 1)) continue;
    want[i] = k;
    tokens.insert(tokens.end(), c.begin() + agree, c.end());
    spans.push_back({agree, L - agree, s.blocks});
    s.fed.insert(s.fed.end(), c.begin() + agree, c.end());
    row_req.push_back(i);
  }
  while (!spans.empty()) {
    const Tensor logits = on_host(draft_.forward_cached(tokens.data(), spans, cache_), host_);
    std::vector<PagedSpan> next_spans;
    std::vector<size_t> next_req;
    tokens.clear();
    for (size_t row = 0; row < row_req.size(); ++row) {
      const size_t i = row_req[row];
      const Request& r = reqs[i];
      std::vector<int32_t>& c = ctx[i];
      const std::span<const float> l(logits.data<float>() + static_cast<int64_t>(row) * V,
                                     static_cast<size_t>(V));
      const std::span<const int32_t> prompt(c.data(), r.prompt.size());
      const std::span<const int32_t> gen(c.data() + r.prompt.size(), c.size() - r.prompt.size());
      const int64_t step = static_cast<int64_t>(gen.size());
      int32_t token = 0;
      if (r.sampler->params().greedy()) {
        token = r.sampler->sample(l, prompt, gen, r.draw_id, step).token;
      } else {
        std::vector<float> q = r.sampler->probabilities(l, prompt, gen);
        token = r.sampler->draw_draft(q, r.draw_id, step);
        out[i].q.push_back(std::move(q));
      }
      out[i].tokens.push_back(token);
      c.push_back(token);
      if (--want[i] == 0) continue;
      Seq& s = seqs_.at(r.id);
      tokens.push_back(token);
      next_spans.push_back({static_cast<int64_t>(s.fed.size()), 1, s.blocks});
      s.fed.push_back(token);
      next_req.push_back(i);
    }
    spans = std::move(next_spans);
    row_req = std::move(next_req);
  }
  return out;
}

}  // namespace parallm
