// Text and JSON renderings of a memory estimate, its verdict against a
// device's memory and the changes that would make it fit; and of the
// inference estimate (weights + KV cache) with the largest cache that fits.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "plan/inference_memory.h"
#include "plan/memory_model.h"

namespace parallm {

// device_bytes <= 0: no verdict.
std::string memory_report_text(const MemoryQuery& q, const std::string& model_name,
                               double device_bytes);
nlohmann::json memory_report_json(const MemoryQuery& q, const std::string& model_name,
                                  double device_bytes);

// device_bytes <= 0: no verdict and no largest batch.
std::string inference_memory_text(const InferenceMemoryQuery& q, const std::string& model_name,
                                  double device_bytes);
nlohmann::json inference_memory_json(const InferenceMemoryQuery& q, const std::string& model_name,
                                     double device_bytes);

}  // namespace parallm
