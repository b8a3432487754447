// The whole run configuration (RunConfig) as JSON, for the `run` record a
// checkpoint keeps in train_state.json so that `--load DIR` alone can
// continue the run. The tables and keys are those of the TOML run file (and
// the flags without their dashes), generated from the run schema; the model
// is its Hugging Face config.json plus, under "parallm", the recorded model
// settings that file cannot say. Invariant: every recorded field survives
// run_config_from_json(run_config_json(rc)) unchanged.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "train/config/run_schema.h"

namespace parallm {

nlohmann::json run_config_json(const RunConfig& rc);
// A key the record lacks (one written before the field existed) keeps its
// default; a mistyped one is an error naming `source`, the table and the key.
RunConfig run_config_from_json(const nlohmann::json& j, const std::string& source);
// The same, by another schema (a test's extension of run_schema()).
nlohmann::json run_config_json(const RunConfig& rc, const RunSchema& schema);
RunConfig run_config_from_json(const nlohmann::json& j, const std::string& source,
                               const RunSchema& schema);

}  // namespace parallm
