// Text and JSON renderings of a memory estimate, its verdict against a
// device's memory and the changes that would make it fit.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "plan/memory_model.h"

namespace parallm {

// device_bytes <= 0: no verdict.
std::string memory_report_text(const MemoryQuery& q, const std::string& model_name,
                               double device_bytes);
nlohmann::json memory_report_json(const MemoryQuery& q, const std::string& model_name,
                                  double device_bytes);

}  // namespace parallm
