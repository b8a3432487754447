// LoraRegistry: the LoRA adapters `parallm serve` holds beside its base
// model, by name (vLLM's --lora-modules, /v1/load_lora_adapter and
// /v1/unload_lora_adapter; docs/serving.md, "Many LoRA adapters"). A request
// whose `model` names an adapter runs with it. Thread-safe: HTTP threads load,
// unload and look up while the engine runs; a sequence holds its adapter
// (shared_ptr), so unloading never frees factors a running batch reads.
// Invariant: at most max_loras adapters, names unique, never the base's name.
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "infer/served_adapter.h"

namespace parallm::serve {

struct LoraEntry {
  std::string name, path;
  std::shared_ptr<const ServedAdapter> adapter;
  uint64_t salt = 0;     // keys its prefix-cache blocks (unique per load)
  int64_t created = 0;   // unix seconds, for /v1/models
};

// Why a load or unload failed: the HTTP layer answers 400 (BadAdapter,
// Exists, Full) or 404 (Unknown), with the message.
struct LoraRegistryError : std::runtime_error {
  enum class Kind { BadAdapter, Exists, Full, Unknown };
  LoraRegistryError(Kind k, const std::string& what) : std::runtime_error(what), kind(k) {}
  Kind kind;
};

class LoraRegistry {
 public:
  // model: the whole single-process model the adapters attach to; base_name:
  // the served model's name (no adapter may take it). max_loras >= 1;
  // max_rank > 0 caps r.
  LoraRegistry(Transformer& model, std::string base_name, int max_loras, int64_t max_rank);
  // Reads path (a PEFT directory) and registers it as name.
  void load(const std::string& name, const std::string& path);
  void unload(const std::string& name);
  std::optional<LoraEntry> find(const std::string& name) const;
  std::vector<LoraEntry> list() const;  // in load order
  int max_loras() const { return max_loras_; }

 private:
  Transformer& model_;
  const std::string base_name_;
  const int max_loras_;
  const int64_t max_rank_;
  mutable std::mutex mu_;
  std::vector<LoraEntry> entries_;
  uint64_t loads_ = 0;
};

// "name=path" of --lora-modules (vLLM's form); throws naming the item.
std::pair<std::string, std::string> parse_lora_module(const std::string& item);

}  // namespace parallm::serve
