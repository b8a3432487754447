// lora_routes (see lora_routes.h).
#include "infer/serve/lora_routes.h"

#include <fmt/core.h>

#include "infer/serve/api_error.h"
#include "infer/serve/request_fields.h"

namespace parallm::serve {
namespace {

LoraRegistry& need(LoraRegistry* registry) {
  if (registry == nullptr)
    throw ApiError(400,
                   "LoRA adapters are off: start the server with --enable-lora or --lora-modules "
                   "(one process, --engine continuous)");
  return *registry;
}

nlohmann::json object_body(const std::string& body) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::parse_error& e) {
    throw ApiError(400, std::string("the request body is not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw ApiError(400, "the request body must be a JSON object");
  return j;
}

std::string required_string(const nlohmann::json& j, const std::string& name) {
  const std::optional<std::string> v = RequestFields(j).string(name);
  if (!v || v->empty()) throw ApiError(400, fmt::format("'{}' is required", name), name);
  return *v;
}

ApiError registry_error(const LoraRegistryError& e) {
  using Kind = LoraRegistryError::Kind;
  if (e.kind == Kind::Unknown) return ApiError(404, e.what(), "lora_name", "not_found_error");
  return ApiError(400, e.what(), e.kind == Kind::BadAdapter ? "lora_path" : "lora_name");
}

}  // namespace

std::string load_lora_adapter(LoraRegistry* registry, const std::string& body) {
  LoraRegistry& reg = need(registry);
  const nlohmann::json j = object_body(body);
  const std::string name = required_string(j, "lora_name");
  const std::string path = required_string(j, "lora_path");
  try {
    reg.load(name, path);
  } catch (const LoraRegistryError& e) {
    throw registry_error(e);
  }
  return fmt::format("Success: LoRA adapter '{}' added successfully.", name);
}

std::string unload_lora_adapter(LoraRegistry* registry, const std::string& body) {
  LoraRegistry& reg = need(registry);
  const nlohmann::json j = object_body(body);
  const std::string name = required_string(j, "lora_name");
  try {
    reg.unload(name);
  } catch (const LoraRegistryError& e) {
    throw registry_error(e);
  }
  return fmt::format("Success: LoRA adapter '{}' removed successfully.", name);
}

nlohmann::json lora_model_cards(const LoraRegistry* registry, const ServedModel& base) {
  nlohmann::json cards = nlohmann::json::array();
  if (registry == nullptr) return cards;
  for (const LoraEntry& e : registry->list())
    cards.push_back({{"id", e.name},
                     {"object", "model"},
                     {"created", e.created},
                     {"owned_by", "parallm"},
                     {"root", e.path},
                     {"parent", base.name},
                     {"max_model_len", base.context}});
  return cards;
}

std::string resolve_model(ApiRequest& r, const LoraRegistry* registry, const ServedModel& base) {
  if (r.model.empty() || r.model == base.name) return "";
  if (registry != nullptr)
    if (std::optional<LoraEntry> e = registry->find(r.model)) {
      r.lora = std::shared_ptr<const LoraFactorTable>(e->adapter, &e->adapter->table());
      r.lora_salt = e->salt;
      return e->name;
    }
  throw ApiError(404,
                 fmt::format("The model `{}` does not exist (this server serves `{}`{}).", r.model,
                             base.name,
                             registry != nullptr && !registry->list().empty()
                                 ? " and the LoRA adapters listed in /v1/models"
                                 : ""),
                 "model", "invalid_request_error", "model_not_found");
}

}  // namespace parallm::serve
