// The HTTP side of served LoRA adapters (docs/openai_api.md): vLLM's POST
// /v1/load_lora_adapter {"lora_name", "lora_path"} and POST
// /v1/unload_lora_adapter {"lora_name"}, the adapters' cards in GET
// /v1/models (each with "parent": the base model's id, as vLLM lists them),
// and a request's `model` resolved to the base model or an adapter. Every
// failure is an ApiError: 400 for a bad body or adapter directory (naming
// the file and key), 404 for an unknown name. registry null: LoRA is off.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

#include "infer/serve/api_request.h"
#include "infer/serve/lora_registry.h"
#include "infer/serve/served_model.h"

namespace parallm::serve {

// The body answered 200 (vLLM answers a line of text; so does this).
std::string load_lora_adapter(LoraRegistry* registry, const std::string& body);
std::string unload_lora_adapter(LoraRegistry* registry, const std::string& body);
// One card per loaded adapter, after the base model's.
nlohmann::json lora_model_cards(const LoraRegistry* registry, const ServedModel& base);
// r.model: "" or the base name runs the base; an adapter's name sets r.lora
// and returns that name; anything else is 404.
std::string resolve_model(ApiRequest& r, const LoraRegistry* registry, const ServedModel& base);

}  // namespace parallm::serve
