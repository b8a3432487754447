// make_engine (see engine_factory.h).
#include "infer/serve/engine_factory.h"

#include "base/error.h"
#include "infer/serve/continuous_engine.h"
#include "infer/serve/static_batch_engine.h"

namespace parallm::serve {

std::unique_ptr<Engine> make_engine(const std::string& kind, Transformer& model,
                                    const EngineSettings& s, StepRunner* runner) {
  if (kind == "continuous") {
    PX_CHECK(runner != nullptr, "the continuous engine needs the paged KV cache's step runner");
    ContinuousEngineOptions o;
    o.scheduler = {.max_batched_tokens = s.max_batched_tokens,
                   .max_running = s.max_running,
                   .prefix_cache = s.prefix_cache};
    o.scheduler.validate();
    o.max_waiting = s.max_waiting;
    o.eos_ids = s.eos_ids;
    o.decode = s.decode;
    o.vocab = s.vocab;
    o.speculative = s.speculative;
    return std::make_unique<ContinuousEngine>(model.config(), *runner, o);
  }
  PX_CHECK(!s.speculative.on() || (kind != "static" && kind != "static-padded"),
           "speculative decoding needs --engine continuous, got {}", kind);
  if (kind == "static" || kind == "static-padded")
    return std::make_unique<StaticBatchEngine>(
        model, StaticBatchEngine::Options{s.max_running, s.max_waiting, s.eos_ids, s.decode,
                                          kind == "static-padded", s.kv_dtype});
  std::string known;  // joined by hand: fmt::join of strings trips a gcc 12 warning
  for (const std::string& k : kEngineKinds) known += (known.empty() ? "" : ", ") + k;
  PX_FAIL("unknown engine '{}' (known: {})", kind, known);
}

}  // namespace parallm::serve
