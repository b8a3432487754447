// make_engine: the Engine `parallm serve --engine KIND` runs, by name, so a
// new engine is one line here and one in kEngineKinds. EngineSettings holds
// what any engine may need from the command line and the model's text side.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "infer/serve/engine.h"
#include "infer/serve/speculative_step.h"
#include "infer/serve/step_runner.h"
#include "infer/structured/token_vocabulary.h"
#include "model/kv_cache/kv_dtype.h"
#include "model/transformer.h"

namespace parallm::serve {

// static-padded: static batching whose finished rows stay in the forward
// until the batch ends (transformers' generate(); Orca's and vLLM's baseline).
inline const std::vector<std::string> kEngineKinds = {"continuous", "static", "static-padded"};

struct EngineSettings {
  int64_t max_running = 8;
  int64_t max_waiting = 64;
  int64_t max_batched_tokens = 512;  // continuous: tokens per step
  bool prefix_cache = true;          // continuous: reuse full blocks by hash
  std::vector<int32_t> eos_ids;
  KvDType kv_dtype = KvDType::F32;  // static engines' caches (continuous: the runner's)
  std::function<std::string(std::span<const int32_t>)> decode;  // stop strings
  // continuous: the vocabulary structured output masks (null: refused).
  std::shared_ptr<const structured::TokenVocabulary> vocab;
  SpeculativeConfig speculative;  // continuous only
};

// model (and runner) must outlive the engine. runner: the paged cache's
// step runner, which the continuous engine needs. Throws on an unknown
// kind, naming the known ones.
std::unique_ptr<Engine> make_engine(const std::string& kind, Transformer& model,
                                    const EngineSettings& s, StepRunner* runner);

}  // namespace parallm::serve
