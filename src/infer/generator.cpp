// generate(): prefill, then one decode forward per step (see generator.h).
#include "infer/generator.h"

#include <algorithm>
#include <chrono>

#include "base/error.h"
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

  std::vector<Generation> out(static_cast<size_t>(S));
  std::vector<int> active(static_cast<size_t>(S));  // the rows of the next forward
  for (int i = 0; i < S; ++i) active[static_cast<size_t>(i)] = i;
  std::vector<char> ended(static_cast<size_t>(S), 0);  // an active row that ended is held
  int unfinished = S;
  std::vector<int32_t> tokens;
  std::vector<PagedSpan> spans;
  auto add_span = [&](int seq, int64_t count) {
    spans.push_back({cached[static_cast<size_t>(seq)], count, tables[static_cast<size_t>(seq)]});
    cached[static_cast<size_t>(seq)] += count;
  };
  for (int i = 0; i < S; ++i) {
    tokens.insert(tokens.end(), prompts[static_cast<size_t>(i)].begin(),
                  prompts[static_cast<size_t>(i)].end());
    add_span(i, static_cast<int64_t>(prompts[static_cast<size_t>(i)].size()));
  }
  Allocator host;  // the logits the sampler reads, copied from a device
  GenerationStats st;
  st.prefill_tokens = static_cast<int64_t>(tokens.size());
  bool prefill = true;
  while (unfinished > 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const Tensor logits = on_host(stage_forward(model, tokens, spans, cache, o.pp), host);
    if (o.on_logits && model.stage().head) o.on_logits(active, logits);
    const int64_t V = cfg.vocab_size;
    // tp rank 0 of the last stage chooses; the others take its ids.
    std::vector<int32_t> chosen(active.size());
    std::vector<SampledToken> samples(active.size());
    if (sampler_rank)
      for (size_t r = 0; r < active.size(); ++r) {
        const size_t seq = static_cast<size_t>(active[r]);
        if (ended[seq]) continue;
        const Generation& g = out[seq];
        samples[r] = samplers[samplers.size() == 1 ? 0 : seq].sample(
            {logits.data<float>() + static_cast<int64_t>(r) * V, static_cast<size_t>(V)},
            prompts[seq], g.tokens, o.draw_ids.empty() ? active[r] : o.draw_ids[seq],
            static_cast<int64_t>(g.tokens.size()));
        chosen[r] = samples[r].token;
      }
    if (tp.active()) tp.comm->broadcast(chosen.data(), chosen.size(), DType::I32, 0);
    if (o.pp) o.pp->broadcast(chosen.data(), chosen.size(), DType::I32, pp_last);
    std::vector<int> still;
    tokens.clear();
    spans.clear();
    auto keep = [&](int seq, int32_t token) {
      still.push_back(seq);
      tokens.push_back(token);
      add_span(seq, 1);
    };
    auto hold = [&](int seq) {  // a held row goes on while its blocks have room
      if (cached[static_cast<size_t>(seq)] < limit[static_cast<size_t>(seq)])
        keep(seq, out[static_cast<size_t>(seq)].tokens.back());
    };
    auto end_row = [&](int seq) {
      ended[static_cast<size_t>(seq)] = 1;
      --unfinished;
      if (o.hold_finished_rows) hold(seq);
    };
    int64_t generated = 0;
    for (size_t r = 0; r < active.size(); ++r) {
      const int seq = active[r];
      if (ended[static_cast<size_t>(seq)]) {
        hold(seq);
        continue;
      }
      ++generated;
      Generation& g = out[static_cast<size_t>(seq)];
      samples[r].token = chosen[r];
      g.tokens.push_back(chosen[r]);
      g.samples.push_back(samples[r]);
      if (o.on_token) o.on_token(seq, samples[r]);
      if (std::find(o.eos_ids.begin(), o.eos_ids.end(), chosen[r]) != o.eos_ids.end()) {
        g.finish = FinishReason::Eos;
        end_row(seq);
        continue;
      }
      if (!stops.empty()) {
        const StopStrings::Scan sc = stops.scan(o.decode(g.tokens));
        if (sc.stopped) {
          g.finish = FinishReason::Stop;
          g.text_end = sc.end;
          end_row(seq);
          continue;
        }
      }
      if (static_cast<int64_t>(g.tokens.size()) >= max_new_of(o, static_cast<size_t>(seq)) ||
          (o.should_stop && o.should_stop(seq))) {  // finish stays Length
        end_row(seq);
        continue;
      }
      keep(seq, chosen[r]);
    }
    active = std::move(still);
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
