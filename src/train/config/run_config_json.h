// The whole run configuration (RunConfig) as JSON, for the `run` record a
// checkpoint keeps in train_state.json so that `--load DIR` alone can
// continue the run. The tables and keys are those of the TOML run file (and
// the flags without their dashes); the model is its Hugging Face config.json
// plus the dropout probabilities that file cannot say. Invariant: every
// field survives run_config_from_json(run_config_json(rc)) unchanged.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "train/train_config.h"

namespace parallm {

nlohmann::json run_config_json(const RunConfig& rc);
// A key the record lacks (one written before the field existed) keeps its
// default; a mistyped one is an error naming `source`, the table and the key.
RunConfig run_config_from_json(const nlohmann::json& j, const std::string& source);

}  // namespace parallm
