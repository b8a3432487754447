// generate(): prefill, then one decode forward per step (see generator.h).
#include "infer/generator.h"

#include <algorithm>
#include <chrono>
#include <optional>

#include "base/error.h"
#include "infer/draft_model.h"
#include "infer/ngram_draft.h"
#include "infer/stage_forward.h"
#include "model/layers/rope_frequencies.h"

namespace parallm {

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::Eos:
      return "eos";
    case FinishReason::Stop:
      return "stop";
    case FinishReason::Length:
      return "length";
  }
  return "?";
}

namespace {

// Tokens per KV block. Generation gives each sequence whole blocks of its
// own; 16 (vLLM's default) keeps the last block's waste small.
constexpr int64_t kBlockSize = 16;

int64_t max_new_of(const GenerateOptions& o, size_t seq) {
  return o.sequence_max_new_tokens.empty() ? o.max_new_tokens : o.sequence_max_new_tokens[seq];
}

void check_request(const ModelConfig& cfg, const std::vector<std::vector<int32_t>>& prompts,
                   const GenerateOptions& o) {
  o.sampling.validate();
  PX_CHECK(o.sequence_sampling.empty() || o.sequence_sampling.size() == prompts.size(),
           "sequence_sampling has {} entries for {} prompts", o.sequence_sampling.size(),
           prompts.size());
  PX_CHECK(o.draw_ids.empty() || o.draw_ids.size() == prompts.size(),
           "draw_ids has {} entries for {} prompts", o.draw_ids.size(), prompts.size());
  for (const SamplingParams& p : o.sequence_sampling) p.validate();
  PX_CHECK(!o.sequence_max_new_tokens.empty() || o.max_new_tokens >= 1,
           "max_new_tokens must be >= 1, got {}", o.max_new_tokens);
  PX_CHECK(o.sequence_max_new_tokens.empty() || o.sequence_max_new_tokens.size() == prompts.size(),
           "sequence_max_new_tokens has {} entries for {} prompts",
           o.sequence_max_new_tokens.size(), prompts.size());
  PX_CHECK(!prompts.empty(), "no prompts to generate from");
  PX_CHECK(o.ngram_draft_tokens >= 0, "ngram_draft_tokens must be >= 0, got {}",
           o.ngram_draft_tokens);
  PX_CHECK(o.draft_model_tokens >= 0, "draft_model_tokens must be >= 0, got {}",
           o.draft_model_tokens);
  PX_CHECK(o.ngram_draft_tokens == 0 || o.draft_model_tokens == 0,
           "speculative decoding drafts by prompt lookup or by a draft model, not both");
  PX_CHECK((o.ngram_draft_tokens == 0 && o.draft_model_tokens == 0) || !o.hold_finished_rows,
           "speculative decoding does not hold finished rows");
  if (o.draft_model) check_draft_vocab(cfg.vocab_size, o.draft_model->config().vocab_size);
  PX_CHECK(o.stop_strings.empty() || o.decode, "stop strings need a decode function");
  StopStrings check(o.stop_strings);  // rejects empty stop strings
  // An EOS id outside the vocabulary is never chosen, so it never ends a
  // sequence: not an error, as in transformers (the jobs warn: eos_ids.h).
  // max_positions, except that dynamic NTK rope scaling stretches to any length.
  const int64_t context = rope_context_limit(cfg);
  for (size_t i = 0; i < prompts.size(); ++i) {
    const int64_t n = static_cast<int64_t>(prompts[i].size());
    PX_CHECK(n >= 1, "prompt {} is empty", i);
    PX_CHECK(n <= context,
             "prompt {} has {} tokens, more than the model's context (max_positions {})", i, n,
             cfg.max_positions);
    const int64_t m = max_new_of(o, i);
    PX_CHECK(m >= 1, "max_new_tokens must be >= 1, got {}", m);
    PX_CHECK(m <= context - n,
             "prompt {} ({} tokens) + max_new_tokens ({}) = {} exceeds the model's context "
             "(max_positions {})",
             i, n, m, n + m, cfg.max_positions);
    for (int32_t t : prompts[i])
      PX_CHECK(t >= 0 && t < cfg.vocab_size,
               "prompt {} holds token {}, outside the vocabulary ({})", i, t, cfg.vocab_size);
  }
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

bool is_sampling_rank(const Transformer& model) {
  return model.stage().head && model.tp().rank() == 0;
}

std::vector<Generation> generate(Transformer& model,
                                 const std::vector<std::vector<int32_t>>& prompts,
                                 const GenerateOptions& o, GenerationStats* stats) {
  const ModelConfig& cfg = model.config();
  check_request(cfg, prompts, o);
  std::vector<Sampler> samplers;
  if (o.sequence_sampling.empty()) samplers.emplace_back(o.sampling);
  for (const SamplingParams& p : o.sequence_sampling) samplers.emplace_back(p);
  const StopStrings stops(o.stop_strings);
  const TpGroup& tp = model.tp();
  const int S = static_cast<int>(prompts.size());
  // Each sequence owns a fixed run of blocks, enough for its prompt and
  // every token it may generate (a held row: every token the batch's
  // longest may generate, up to the context); nothing is shared, nothing
  // is evicted.
  const LayerRange layers = model.cached_layers();
  int64_t most_new = 0;
  for (int i = 0; i < S; ++i) most_new = std::max(most_new, max_new_of(o, static_cast<size_t>(i)));
  std::vector<int64_t> limit(static_cast<size_t>(S));  // positions a row may hold
  std::vector<std::vector<int32_t>> tables(static_cast<size_t>(S));
  int32_t next_block = 0;
  for (int i = 0; i < S; ++i) {
    const int64_t n = static_cast<int64_t>(prompts[static_cast<size_t>(i)].size());
    const int64_t need = o.hold_finished_rows ? n + std::min(most_new, rope_context_limit(cfg) - n)
                                              : n + max_new_of(o, static_cast<size_t>(i));
    limit[static_cast<size_t>(i)] = need;
    for (int64_t b = 0; b < (need + kBlockSize - 1) / kBlockSize; ++b)
      tables[static_cast<size_t>(i)].push_back(next_block++);
  }
  PagedKvCache cache(cfg, tp, next_block, kBlockSize, model.allocator(), layers, o.kv_dtype);
  std::vector<int64_t> cached(static_cast<size_t>(S), 0);  // positions each sequence holds
  PX_CHECK(model.whole() || o.pp != nullptr, "a pipeline stage generates only with its pp group");
  const int pp_last = o.pp ? o.pp->size() - 1 : 0;
  const bool sampler_rank = is_sampling_rank(model);
  const int64_t draft_k = std::max(o.ngram_draft_tokens, o.draft_model_tokens);
  // A draft model runs on the sampling rank alone; its drafts reach the
  // other ranks as the chosen ids do.
  const bool model_drafts = o.draft_model_tokens > 0;
  PX_CHECK(!model_drafts || !sampler_rank || o.draft_model != nullptr,
           "draft_model_tokens ({}) needs a draft model on the sampling rank",
           o.draft_model_tokens);
  std::optional<DraftModel> drafter;
  if (model_drafts && sampler_rank)
    drafter.emplace(*o.draft_model, next_block, kBlockSize, o.kv_dtype);

  std::vector<Generation> out(static_cast<size_t>(S));
  std::vector<int> active(static_cast<size_t>(S));  // the sequences of the next forward
  for (int i = 0; i < S; ++i) active[static_cast<size_t>(i)] = i;
  std::vector<char> ended(static_cast<size_t>(S), 0);  // an active row that ended is held
  int unfinished = S;
  std::vector<int32_t> tokens;
  std::vector<PagedSpan> spans;
  // Per active sequence: its first logits row and the tokens drafted after
  // its last one (each drafted token is a span, and so a row, of its own).
  std::vector<int64_t> first_row;
  std::vector<std::vector<int32_t>> drafts;
  std::vector<std::vector<std::vector<float>>> draft_q;  // a draft model's q per draft (sampled)
  std::vector<int> row_seq;  // each logits row's sequence
  auto add_span = [&](int seq, int64_t count) {
    spans.push_back({cached[static_cast<size_t>(seq)], count, tables[static_cast<size_t>(seq)]});
    cached[static_cast<size_t>(seq)] += count;
  };
  for (int i = 0; i < S; ++i) {
    tokens.insert(tokens.end(), prompts[static_cast<size_t>(i)].begin(),
                  prompts[static_cast<size_t>(i)].end());
    first_row.push_back(i);
    drafts.emplace_back();
    draft_q.emplace_back();
    row_seq.push_back(i);
    add_span(i, static_cast<int64_t>(prompts[static_cast<size_t>(i)].size()));
  }
  Allocator host;  // the logits the sampler reads, copied from a device
  GenerationStats st;
  st.prefill_tokens = static_cast<int64_t>(tokens.size());
  bool prefill = true;
  std::vector<int32_t> context;  // a sequence's prompt and tokens, for its drafts
  while (unfinished > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor logits = on_host(stage_forward(model, tokens, spans, cache, o.pp), host);
    if (o.on_logits && model.stage().head) o.on_logits(row_seq, logits);
    const int64_t V = cfg.vocab_size;
    // tp rank 0 of the last stage chooses, row by row while the drafts
    // agree (-1: a row not chosen from); the others take its ids.
    std::vector<int32_t> chosen(row_seq.size(), -1);
    std::vector<SampledToken> samples(row_seq.size());
    if (sampler_rank)
      for (size_t r = 0; r < active.size(); ++r) {
        const size_t seq = static_cast<size_t>(active[r]);
        if (ended[seq]) continue;
        // The tokens so far, and each confirmed draft after them (a copy
        // only when there are drafts).
        std::vector<int32_t> with_drafts;
        if (!drafts[r].empty()) with_drafts = out[seq].tokens;
        const std::vector<int32_t>& gen = drafts[r].empty() ? out[seq].tokens : with_drafts;
        for (size_t j = 0; j <= drafts[r].size(); ++j) {
          const int64_t row = first_row[r] + static_cast<int64_t>(j);
          SampledToken& t = samples[static_cast<size_t>(row)];
          t = samplers[samplers.size() == 1 ? 0 : seq].sample(
              {logits.data<float>() + row * V, static_cast<size_t>(V)}, prompts[seq], gen,
              o.draw_ids.empty() ? active[r] : o.draw_ids[seq], static_cast<int64_t>(gen.size()),
              j < drafts[r].size() ? drafts[r][j] : -1,
              j < draft_q[r].size() ? std::span<const float>(draft_q[r][j])
                                    : std::span<const float>());
          chosen[static_cast<size_t>(row)] = t.token;
          if (j == drafts[r].size() || t.token != drafts[r][j]) break;
          with_drafts.push_back(t.token);
        }
      }
    if (tp.active()) tp.comm->broadcast(chosen.data(), chosen.size(), DType::I32, 0);
    if (o.pp) o.pp->broadcast(chosen.data(), chosen.size(), DType::I32, pp_last);
    std::vector<int> still;
    std::vector<int64_t> still_first;
    std::vector<std::vector<int32_t>> still_drafts;
    std::vector<std::vector<std::vector<float>>> still_q;
    const std::vector<PagedSpan> fed = std::move(spans);
    tokens.clear();
    spans.clear();
    row_seq.clear();
    // The sequences of the next forward and their last tokens; drafts are
    // proposed for all of them together (a draft model batches them).
    std::vector<std::pair<int, int32_t>> kept;
    auto keep = [&](int seq, int32_t token) { kept.emplace_back(seq, token); };
    auto hold = [&](int seq) {  // a held row goes on while its blocks have room
      if (cached[static_cast<size_t>(seq)] < limit[static_cast<size_t>(seq)])
        keep(seq, out[static_cast<size_t>(seq)].tokens.back());
    };
    auto end_row = [&](int seq) {
      ended[static_cast<size_t>(seq)] = 1;
      --unfinished;
      if (drafter) drafter->release(static_cast<uint64_t>(seq));
      if (o.hold_finished_rows) hold(seq);
    };
    int64_t generated = 0;
    for (size_t r = 0; r < active.size(); ++r) {
      const int seq = active[r];
      if (ended[static_cast<size_t>(seq)]) {
        hold(seq);
        continue;
      }
      Generation& g = out[static_cast<size_t>(seq)];
      // The chosen rows in order: the drafts they confirm, then the target's own.
      bool ends = false;
      int64_t taken = 0;
      for (size_t j = 0; j <= drafts[r].size() && !ends; ++j) {
        const size_t row = static_cast<size_t>(first_row[r]) + j;
        if (chosen[row] < 0) break;
        ++taken;
        ++generated;
        if (j > 0) ++st.accepted_draft_tokens;
        samples[row].token = chosen[row];
        g.tokens.push_back(chosen[row]);
        g.samples.push_back(samples[row]);
        if (o.on_token) o.on_token(seq, samples[row]);
        if (std::find(o.eos_ids.begin(), o.eos_ids.end(), chosen[row]) != o.eos_ids.end()) {
          g.finish = FinishReason::Eos;
          ends = true;
        } else if (StopStrings::Scan sc =
                       stops.empty() ? StopStrings::Scan{} : stops.scan(o.decode(g.tokens));
                   sc.stopped) {
          g.finish = FinishReason::Stop;
          g.text_end = sc.end;
          ends = true;
        } else if (static_cast<int64_t>(g.tokens.size()) >=
                       max_new_of(o, static_cast<size_t>(seq)) ||
                   (o.should_stop && o.should_stop(seq))) {  // finish stays Length
          ends = true;
        }
        if (j == drafts[r].size() || chosen[row] != drafts[r][j]) break;
      }
      // The cache holds the fed tokens up to the last confirmed draft; the
      // positions past it are written over by the next tokens.
      const PagedSpan& first = fed[static_cast<size_t>(first_row[r])];
      cached[static_cast<size_t>(seq)] = first.pos0 + first.count + taken - 1;
      if (ends) {
        end_row(seq);
        continue;
      }
      keep(seq, g.tokens.back());
    }
    // Drafts where there is room: the sequence's blocks, and its tokens
    // still to come less the one the target adds after them.
    std::vector<DraftModel::Request> asks;
    std::vector<size_t> ask_of;  // kept index of each request
    std::vector<std::vector<int32_t>> proposed(kept.size());
    std::vector<std::vector<std::vector<float>>> proposed_q(kept.size());
    for (size_t i = 0; i < kept.size(); ++i) {
      const size_t seq = static_cast<size_t>(kept[i].first);
      const Generation& g = out[seq];
      const int64_t room = std::min({draft_k, limit[seq] - cached[seq] - 1,
                                     max_new_of(o, seq) - static_cast<int64_t>(g.tokens.size()) - 1});
      if (room <= 0 || ended[seq]) continue;
      if (model_drafts) {
        asks.push_back({.id = seq,
                        .prompt = prompts[seq],
                        .generated = g.tokens,
                        .k = room,
                        .sampler = &samplers[samplers.size() == 1 ? 0 : seq],
                        .draw_id = o.draw_ids.empty() ? static_cast<int64_t>(seq) : o.draw_ids[seq]});
        ask_of.push_back(i);
      } else {
        context.assign(prompts[seq].begin(), prompts[seq].end());
        context.insert(context.end(), g.tokens.begin(), g.tokens.end());
        proposed[i] = ngram_draft(context, room);
      }
    }
    if (drafter && !asks.empty()) {
      std::vector<DraftModel::Proposal> props = drafter->propose(asks);
      for (size_t a = 0; a < asks.size(); ++a) {
        proposed[ask_of[a]] = std::move(props[a].tokens);
        proposed_q[ask_of[a]] = std::move(props[a].q);
      }
    }
    if (model_drafts && !asks.empty() && (tp.active() || o.pp)) {
      // Counts, then tokens, from the sampling rank (tp rank 0 of the last stage).
      std::vector<int32_t> counts(asks.size());
      for (size_t a = 0; a < asks.size(); ++a)
        counts[a] = static_cast<int32_t>(proposed[ask_of[a]].size());
      auto share = [&](std::vector<int32_t>& v) {
        if (tp.active()) tp.comm->broadcast(v.data(), v.size(), DType::I32, 0);
        if (o.pp) o.pp->broadcast(v.data(), v.size(), DType::I32, pp_last);
      };
      share(counts);
      std::vector<int32_t> flat;
      for (size_t a = 0; a < asks.size(); ++a)
        if (sampler_rank) flat.insert(flat.end(), proposed[ask_of[a]].begin(), proposed[ask_of[a]].end());
      int64_t total = 0;
      for (int32_t c : counts) total += c;
      flat.resize(static_cast<size_t>(total));
      if (total > 0) share(flat);
      size_t at = 0;
      for (size_t a = 0; a < asks.size(); ++a) {
        proposed[ask_of[a]].assign(flat.begin() + static_cast<std::ptrdiff_t>(at),
                                   flat.begin() + static_cast<std::ptrdiff_t>(at + counts[a]));
        at += static_cast<size_t>(counts[a]);
      }
    }
    for (size_t i = 0; i < kept.size(); ++i) {
      const int seq = kept[i].first;
      still.push_back(seq);
      still_first.push_back(static_cast<int64_t>(row_seq.size()));
      tokens.push_back(kept[i].second);
      row_seq.push_back(seq);
      add_span(seq, 1);
      for (int32_t t : proposed[i]) {
        tokens.push_back(t);
        row_seq.push_back(seq);
        add_span(seq, 1);  // its own span: its own logits row
      }
      st.draft_tokens += static_cast<int64_t>(proposed[i].size());
      still_drafts.push_back(std::move(proposed[i]));
      still_q.push_back(std::move(proposed_q[i]));
    }
    active = std::move(still);
    first_row = std::move(still_first);
    drafts = std::move(still_drafts);
    draft_q = std::move(still_q);
    const double dt = seconds_since(t0);
    if (prefill) {
      st.prefill_s += dt;
    } else {
      st.decode_s += dt;
      st.decode_tokens += generated;
    }
    prefill = false;
  }
  if (stats) *stats = st;
  return out;
}

}  // namespace parallm
