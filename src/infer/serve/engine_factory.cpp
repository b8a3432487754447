// make_engine (see engine_factory.h).
#include "infer/serve/engine_factory.h"

#include "base/error.h"
#include "infer/serve/static_batch_engine.h"

namespace parallm::serve {

std::unique_ptr<Engine> make_engine(const std::string& kind, Transformer& model,
                                    const EngineSettings& s) {
  if (kind == "static")
    return std::make_unique<StaticBatchEngine>(
        model, StaticBatchEngine::Options{s.max_running, s.max_waiting, s.eos_ids, s.decode});
  std::string known;  // joined by hand: fmt::join of strings trips a gcc 12 warning
  for (const std::string& k : kEngineKinds) known += (known.empty() ? "" : ", ") + k;
  PX_FAIL("unknown engine '{}' (known: {})", kind, known);
}

}  // namespace parallm::serve
