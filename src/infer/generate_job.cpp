// run_generate_job (see generate_job.h).
#include "tensor/dtype.h"
#include "infer/generate_job.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>

#include "data/tokenizer/tokenizer.h"
#include "data/tokenizer/utf8.h"
#include "infer/draft_model.h"
#include "infer/eos_ids.h"
#include "infer/model_text.h"
#include "ops/host_runtime.h"
#include "comm/rank_groups.h"

namespace parallm {

namespace {
std::vector<std::string> read_prompts(const GenerateJobOptions& o) {
  std::vector<std::string> p = o.prompts;
  if (!o.prompts_file.empty()) {
    std::ifstream f(o.prompts_file);
    PX_CHECK(f.good(), "cannot read prompts file '{}'", o.prompts_file);
    for (std::string line; std::getline(f, line);)
      if (!line.empty()) p.push_back(line);
  }
  PX_CHECK(!p.empty(), "no prompts: give --prompt TEXT or --prompts-file FILE");
  return p;
}

// Token ids of each prompt (model_text.h: a chat prompt whose template wrote
// the BOS itself is encoded without adding another).
std::vector<std::vector<int32_t>> encode_prompts(const GenerateJobOptions& o,
                                                 const std::vector<std::string>& texts,
                                                 const Tokenizer& tok, const std::string& dir) {
  std::vector<std::vector<int32_t>> out;
  if (!o.chat) {
    for (const std::string& t : texts) out.push_back(tok.encode(t, true));
    return out;
  }
  const ChatTemplate tmpl = load_chat_template(dir);
  for (const std::string& t : texts) {
    std::vector<ChatMessage> conv;
    if (!o.system.empty()) conv.push_back({"system", o.system});
    conv.push_back({"user", t});
    out.push_back(encode_chat(tok, tmpl, conv));
  }
  return out;
}

// The bytes of a generation: an EOS id that ended it is not part of it.
std::string generated_bytes(const Generation& g, const Tokenizer& tok) {
  std::span<const int32_t> ids(g.tokens);
  if (g.finish == FinishReason::Eos) ids = ids.first(ids.size() - 1);
  std::string text = tok.decode_bytes(ids, true);
  if (g.finish == FinishReason::Stop) text.resize(g.text_end);
  return text;
}

nlohmann::json result_json(size_t i, const Generation& g, int logprobs, const Tokenizer& tok) {
  const std::string text = utf8_lossy(generated_bytes(g, tok));
  nlohmann::json j{{"prompt", i},
                   {"text", text},
                   {"tokens", g.tokens},
                   {"finish_reason", finish_reason_name(g.finish)}};
  if (logprobs > 0) {
    nlohmann::json lp = nlohmann::json::array();
    for (const SampledToken& s : g.samples) {
      nlohmann::json top = nlohmann::json::array();
      for (const TokenLogprob& t : s.top)
        top.push_back({{"token", t.token}, {"logprob", t.logprob}});
      lp.push_back({{"token", s.token}, {"logprob", s.logprob}, {"top", top}});
    }
    j["logprobs"] = lp;
  }
  return j;
}
}  // namespace

int run_generate_job(const GenerateJobOptions& opts, comm::Communicator* world, std::ostream& out,
                     std::ostream& err, JobDevice* device) {
  // Every check that needs no model runs before loading it.
  opts.gen.sampling.validate();
  PX_CHECK(opts.gen.max_new_tokens >= 1, "max_new_tokens must be >= 1, got {}",
           opts.gen.max_new_tokens);
  const Precision precision = precision_from_name(opts.dtype);
  PX_CHECK(precision != Precision::FP16, "--dtype must be fp32 or bf16, got {}", opts.dtype);
  const std::vector<std::string> texts = read_prompts(opts);
  const std::string dir = tokenizer_dir(opts.source, opts.tokenizer);
  const std::unique_ptr<Tokenizer> tok = load_tokenizer_or_bytes(dir);
  const std::vector<std::vector<int32_t>> prompts = encode_prompts(opts, texts, *tok, dir);
  ops::set_host_threads(opts.threads);
  std::optional<HostJobDevice> host;
  if (device == nullptr) device = &host.emplace(device_from_name(opts.device), world);
  world = device->world();
  const int ranks = world ? world->size() : 1, rank = world ? world->rank() : 0;
  PX_CHECK(opts.tp >= 1 && opts.pp >= 1 && opts.tp * opts.pp == ranks,
           "tp ({}) x pp ({}) must equal the number of ranks ({})", opts.tp, opts.pp, ranks);
  const bool drafting = opts.gen.draft_model_tokens > 0;
  PX_CHECK(!drafting || !opts.draft.hf_dir.empty() || !opts.draft.gguf.empty(),
           "--num-speculative-tokens with a draft model needs --draft-model DIR");
  const RankGrid grid(GridSizes{.tp = opts.tp, .pp = opts.pp}, ranks);
  const RankGroups groups = split_groups(grid, world, rank);
  InferenceModel im(opts.source, inference_placement(grid, groups, rank, device->memory()),
                    precision, world);
  const TpGroup& tp = im.model().tp();
  const bool writer = is_sampling_rank(im.model());
  check_tokenizer_fits(*tok, dir, im.model().config().vocab_size);
  // The draft runs whole on the sampling rank alone (generator.h).
  std::optional<InferenceModel> draft;
  if (drafting && writer) {
    draft.emplace(opts.draft, InferenceModel::Placement{.memory = &device->memory()}, precision,
                  nullptr);
    check_draft_vocab(im.model().config().vocab_size, draft->model().config().vocab_size);
  }

  GenerateOptions gen = opts.gen;
  gen.draft_model = draft ? &draft->model() : nullptr;
  gen.pp = opts.pp > 1 ? groups.pp.get() : nullptr;
  gen.eos_ids = generation_eos_ids(opts.source, im.eos_ids(), *tok, dir,
                                   im.model().config().vocab_size, rank == 0 ? &err : nullptr);
  gen.decode = [&](std::span<const int32_t> ids) { return tok->decode_bytes(ids, true); };
  const bool stream = texts.size() == 1 && !opts.json;
  StopStrings stops(gen.stop_strings);
  std::vector<int32_t> so_far;
  size_t shown = 0;  // bytes of the decoded text already written
  if (stream && writer)
    gen.on_token = [&](int, const SampledToken& s) {
      if (std::find(gen.eos_ids.begin(), gen.eos_ids.end(), s.token) != gen.eos_ids.end()) return;
      so_far.push_back(s.token);
      const std::string text = gen.decode(so_far);
      // Never half a UTF-8 character, nor text that may start a stop string.
      size_t end = utf8_complete_prefix(text);
      if (!stops.empty()) end = std::min(end, stops.scan(text).end);
      if (end > shown) {
        out << utf8_lossy(text.substr(shown, end - shown)) << std::flush;
        shown = end;
      }
    };
  GenerationStats st;
  const std::vector<Generation> res = generate(im.model(), prompts, gen, &st);
  if (!writer) return 0;
  if (stream) {
    // A sequence that ended without a stop string may hold back a tail.
    const std::string text = generated_bytes(res[0], *tok);
    if (text.size() > shown) out << utf8_lossy(text.substr(shown));
    out << std::endl;
  } else {
    for (size_t i = 0; i < res.size(); ++i)
      out << result_json(i, res[i], gen.sampling.logprobs, *tok).dump() << "\n";
    out << std::flush;
  }
  auto rate = [](int64_t n, double s) { return s > 0 ? static_cast<double>(n) / s : 0.0; };
  err << fmt::format(
             "generate: {} prompts, tp {}, pp {}, {}, kv {}: prefill {} tokens in {:.3f} s ({:.1f} "
             "tokens/s), "
             "decode {} tokens in {:.3f} s ({:.1f} tokens/s)",
             prompts.size(), tp.size(), opts.pp, opts.dtype, kv_dtype_name(gen.kv_dtype),
             st.prefill_tokens, st.prefill_s,
             rate(st.prefill_tokens, st.prefill_s), st.decode_tokens, st.decode_s,
             rate(st.decode_tokens, st.decode_s));
  if (gen.ngram_draft_tokens > 0 || gen.draft_model_tokens > 0)
    err << fmt::format(", {} drafts {} tokens, {} accepted ({:.0f}%)",
                       gen.draft_model_tokens > 0 ? "draft-model" : "ngram", st.draft_tokens,
                       st.accepted_draft_tokens,
                       100.0 * rate(st.accepted_draft_tokens, static_cast<double>(st.draft_tokens)));
  err << std::endl;
  return 0;
}

}  // namespace parallm
