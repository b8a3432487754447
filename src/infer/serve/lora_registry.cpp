// LoraRegistry (see lora_registry.h). Reading an adapter (file I/O, the
// factors' allocation) runs outside the lock; only the list is guarded.
#include "infer/serve/lora_registry.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <ctime>

#include "base/error.h"
#include "base/rng.h"

namespace parallm::serve {
namespace {
using Kind = LoraRegistryError::Kind;

// Names appear in /metrics labels and JSON: letters, digits and ._:/- only.
void check_name(const std::string& name) {
  const bool ok = !name.empty() && name.size() <= 256 &&
                  std::all_of(name.begin(), name.end(), [](char ch) {
                    return std::isalnum(static_cast<unsigned char>(ch)) || ch == '.' ||
                           ch == '_' || ch == '-' || ch == ':' || ch == '/';
                  });
  if (!ok)
    throw LoraRegistryError(Kind::BadAdapter,
                            fmt::format("lora_name '{}' must be 1 to 256 letters, digits or ._:/-",
                                        name));
}
}  // namespace

LoraRegistry::LoraRegistry(Transformer& model, std::string base_name, int max_loras,
                           int64_t max_rank)
    : model_(model), base_name_(std::move(base_name)), max_loras_(max_loras), max_rank_(max_rank) {
  PX_CHECK(max_loras >= 1, "--max-loras must be at least 1, got {}", max_loras);
  PX_CHECK(max_rank >= 0, "--max-lora-rank must be positive (0: any), got {}", max_rank);
}

void LoraRegistry::load(const std::string& name, const std::string& path) {
  check_name(name);
  if (name == base_name_)
    throw LoraRegistryError(Kind::Exists,
                            fmt::format("'{}' is the base model's name, not an adapter's", name));
  if (path.empty()) throw LoraRegistryError(Kind::BadAdapter, "lora_path is empty");
  auto full_or_taken = [&] {
    if (std::any_of(entries_.begin(), entries_.end(),
                    [&](const LoraEntry& e) { return e.name == name; }))
      throw LoraRegistryError(Kind::Exists,
                              fmt::format("a LoRA adapter named '{}' is already loaded", name));
    if (static_cast<int>(entries_.size()) >= max_loras_)
      throw LoraRegistryError(
          Kind::Full, fmt::format("{} LoRA adapters are loaded, the limit (--max-loras); unload "
                                  "one first",
                                  entries_.size()));
  };
  {
    std::lock_guard<std::mutex> lk(mu_);
    full_or_taken();
  }
  std::shared_ptr<const ServedAdapter> a;
  try {
    a = ServedAdapter::load(path, model_, max_rank_);
  } catch (const Error& e) {
    throw LoraRegistryError(Kind::BadAdapter, e.what());
  } catch (const nlohmann::json::exception& e) {  // a key of the wrong JSON type
    throw LoraRegistryError(Kind::BadAdapter, fmt::format("{}/adapter_config.json: {}", path,
                                                          e.what()));
  }
  std::lock_guard<std::mutex> lk(mu_);
  full_or_taken();  // another load may have won meanwhile
  ++loads_;
  entries_.push_back({name, path, std::move(a), mix64(loads_ ^ hash_name(name)),
                      static_cast<int64_t>(std::time(nullptr))});
}

void LoraRegistry::unload(const std::string& name) {
  std::lock_guard<std::mutex> lk(mu_);
  const auto it = std::find_if(entries_.begin(), entries_.end(),
                               [&](const LoraEntry& e) { return e.name == name; });
  if (it == entries_.end())
    throw LoraRegistryError(Kind::Unknown,
                            fmt::format("no LoRA adapter named '{}' is loaded", name));
  entries_.erase(it);
}

std::optional<LoraEntry> LoraRegistry::find(const std::string& name) const {
  std::lock_guard<std::mutex> lk(mu_);
  for (const LoraEntry& e : entries_)
    if (e.name == name) return e;
  return std::nullopt;
}

std::vector<LoraEntry> LoraRegistry::list() const {
  std::lock_guard<std::mutex> lk(mu_);
  return entries_;
}

std::pair<std::string, std::string> parse_lora_module(const std::string& item) {
  const size_t eq = item.find('=');
  PX_CHECK(eq != std::string::npos && eq > 0 && eq + 1 < item.size(),
           "--lora-modules: '{}' is not name=path", item);
  return {item.substr(0, eq), item.substr(eq + 1)};
}

}  // namespace parallm::serve
