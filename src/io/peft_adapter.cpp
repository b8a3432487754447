#include "io/peft_adapter.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "io/hf_model.h"
#include "io/hf_slices.h"
#include "io/safetensors.h"
#include "model/lora/lora_merge.h"
#include "model/lora/lora_model.h"

namespace fs = std::filesystem;

namespace parallm {
namespace {

constexpr const char* kPrefix = "base_model.model.";

// LLaMA's HF module name of each linear kind.
const std::map<std::string, std::string>& module_of_kind() {
  static const std::map<std::string, std::string> m = {
      {"q", "q_proj"},       {"k", "k_proj"},   {"v", "v_proj"},      {"o", "o_proj"},
      {"gate", "gate_proj"}, {"up", "up_proj"}, {"down", "down_proj"}};
  return m;
}

void check_family(const ModelConfig& cfg) {
  PX_CHECK(cfg.arch == Arch::LLaMA,
           "PEFT adapter files are built for llama models only; a {} model's fused c_attn "
           "shares one LoRA A over q, k and v, which parallm's adapters do not (docs/lora.md)",
           arch_name(cfg.arch));
  PX_CHECK(!cfg.moe.enabled(), "PEFT adapter files for MoE models are not built yet");
}

// "layers.3.attn.q.weight" -> "q"
std::string kind_of(const std::string& internal) {
  const size_t end = internal.rfind(".weight");
  const size_t begin = internal.rfind('.', end - 1);
  return internal.substr(begin + 1, end - begin - 1);
}

}  // namespace

std::vector<HfTensor> peft_layout(const ModelConfig& cfg) {
  check_family(cfg);
  const int64_t r = cfg.lora.rank;
  std::vector<HfTensor> out;
  for (const HfTensor& t : hf_layout(cfg)) {
    if (t.parts.size() != 1 || t.shape.size() != 2 || t.name == "lm_head.weight" ||
        t.name.find(".layers.") == std::string::npos)
      continue;
    const std::string kind = kind_of(t.parts[0]);
    if (!module_of_kind().contains(kind) || !cfg.lora.targets_kind(kind)) continue;
    const std::string stem = t.name.substr(0, t.name.size() - 7);  // drop ".weight"
    const std::string part = t.parts[0].substr(0, t.parts[0].size() - 7);
    out.push_back({kPrefix + stem + ".lora_A.weight", {r, t.shape[1]}, {part + ".lora_A"}});
    out.push_back({kPrefix + stem + ".lora_B.weight", {t.shape[0], r}, {part + ".lora_B"}});
  }
  return out;
}

PeftConfigFile read_peft_config_file(const std::string& dir) {
  const fs::path p = fs::path(dir) / "adapter_config.json";
  PX_CHECK(fs::exists(p), "adapter directory '{}' has no adapter_config.json", dir);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(std::ifstream(p));
  } catch (const nlohmann::json::parse_error& e) {
    PX_FAIL("{}: malformed JSON: {}", p.string(), e.what());
  }
  const std::string type = j.value("peft_type", "");
  PX_CHECK(type == "LORA", "{}: peft_type is '{}', only LORA adapters are read", p.string(), type);
  PX_CHECK(j.contains("r") && j["r"].is_number_integer(), "{}: no integer 'r'", p.string());
  LoraConfig l;
  l.rank = j["r"].get<int64_t>();
  PX_CHECK(l.rank > 0, "{}: r must be positive, got {}", p.string(), l.rank);
  l.alpha = j.value("lora_alpha", 8.0);
  l.dropout = j.value("lora_dropout", 0.0);
  l.rslora = j.value("use_rslora", false);
  const std::string bias = j.contains("bias") && j["bias"].is_string() ? j["bias"] : "none";
  PX_CHECK(bias == "none", "{}: bias '{}' adapters are not built (bias must be \"none\")",
           p.string(), bias);
  PX_CHECK(!j.value("use_dora", false), "{}: DoRA adapters are not built", p.string());
  for (const char* key : {"rank_pattern", "alpha_pattern"})
    PX_CHECK(!j.contains(key) || j[key].is_null() || j[key].empty(),
             "{}: per-module {} is not supported", p.string(), key);
  PX_CHECK(!j.contains("layers_to_transform") || j["layers_to_transform"].is_null(),
           "{}: layers_to_transform is not supported (adapters on every layer only)", p.string());
  PX_CHECK(j.contains("target_modules") &&
               (j["target_modules"].is_string() || j["target_modules"].is_array()),
           "{}: target_modules must be a string or a list of strings", p.string());
  std::vector<std::string> modules;
  const nlohmann::json& tm = j["target_modules"];
  if (tm.is_string())
    modules.push_back(tm.get<std::string>());
  else
    for (const auto& m : tm) {
      PX_CHECK(m.is_string(), "{}: target_modules must be a list of strings", p.string());
      modules.push_back(m.get<std::string>());
    }
  return {p.string(), l, modules};
}

LoraConfig read_peft_config(const std::string& dir, const ModelConfig& base) {
  check_family(base);
  PeftConfigFile f = read_peft_config_file(dir);
  const fs::path p = f.path;
  LoraConfig l = f.lora;
  const std::vector<std::string>& modules = f.modules;
  std::vector<std::string> known;
  for (const auto& [kind, module] : module_of_kind()) known.push_back(module);
  for (const std::string& m : modules) {
    if (m == kLoraAllLinear) {
      l.targets.push_back(m);
      continue;
    }
    std::string kind;
    for (const auto& [k, module] : module_of_kind())
      if (module == m) kind = k;
    PX_CHECK(!kind.empty(),
             "{}: target module '{}' is not a linear of a {} model (its linears: {})", p.string(),
             m, arch_name(base.arch), fmt::join(known, ", "));
    l.targets.push_back(kind);
  }
  ModelConfig check = base;
  check.lora = l;
  check_lora_targets(check);
  return l;
}

void check_lora_matches(const LoraConfig& a, const LoraConfig& run, const std::string& dir) {
  auto kinds = [](const LoraConfig& l) {
    std::vector<std::string> k;
    for (const std::string& kind : lora_target_kinds())
      if (l.targets_kind(kind)) k.push_back(kind);
    return k;
  };
  PX_CHECK(a.rank == run.rank, "adapter '{}' has r {}, the run asks for --lora-rank {}", dir,
           a.rank, run.rank);
  PX_CHECK(std::abs(a.alpha - run.alpha) <= 1e-12 * std::abs(run.alpha),
           "adapter '{}' has lora_alpha {}, the run asks for --lora-alpha {}", dir, a.alpha,
           run.alpha);
  PX_CHECK(a.rslora == run.rslora, "adapter '{}' has use_rslora {}, the run has {}", dir, a.rslora,
           run.rslora);
  PX_CHECK(kinds(a) == kinds(run), "adapter '{}' targets {}, the run targets {}", dir,
           fmt::join(kinds(a), ","), fmt::join(kinds(run), ","));
}

void save_peft_adapter(const std::string& dir, const Transformer& model,
                       const std::string& base_model_name) {
  const ModelConfig& cfg = model.config();
  PX_CHECK(cfg.lora.enabled(), "saving a PEFT adapter needs a model with LoRA");
  const std::vector<HfTensor> layout = peft_layout(cfg);
  std::vector<std::vector<float>> buffers(layout.size());
  SafetensorsWriter w;
  for (size_t i = 0; i < layout.size(); ++i) {
    buffers[i].resize(static_cast<size_t>(layout[i].shape[0] * layout[i].shape[1]));
    gather_hf_tensor(model.params(), layout[i], false, buffers[i].data());
    w.add_f32_as(layout[i].name, DType::F32, layout[i].shape, buffers[i].data());
  }
  w.set_metadata("format", "pt");
  std::vector<std::string> modules;
  for (const auto& [kind, module] : module_of_kind())
    if (cfg.lora.targets_kind(kind)) modules.push_back(module);
  std::sort(modules.begin(), modules.end());
  const nlohmann::json j = {{"peft_type", "LORA"},
                            {"task_type", "CAUSAL_LM"},
                            {"base_model_name_or_path", base_model_name},
                            {"r", cfg.lora.rank},
                            {"lora_alpha", cfg.lora.alpha},
                            {"lora_dropout", cfg.lora.dropout},
                            {"target_modules", modules},
                            {"use_rslora", cfg.lora.rslora},
                            {"bias", "none"},
                            {"fan_in_fan_out", false},
                            {"inference_mode", true},
                            {"init_lora_weights", true},
                            {"modules_to_save", nullptr},
                            {"use_dora", false},
                            {"rank_pattern", nlohmann::json::object()},
                            {"alpha_pattern", nlohmann::json::object()}};
  write_dir_atomically(dir, [&](const fs::path& tmp) {
    std::ofstream(tmp / "adapter_config.json") << j.dump(2) << "\n";
    w.write((tmp / "adapter_model.safetensors").string());
  });
}

void load_peft_adapter(const std::string& dir, Transformer& model) {
  const ModelConfig& cfg = model.config();
  check_lora_matches(read_peft_config(dir, cfg), cfg.lora, dir);
  const std::vector<HfTensor> layout = peft_layout(cfg);
  std::map<std::string, const HfTensor*> expected;
  for (const HfTensor& t : layout) expected[t.name] = &t;
  const fs::path file = fs::path(dir) / "adapter_model.safetensors";
  PX_CHECK(fs::exists(file), "adapter directory '{}' has no adapter_model.safetensors", dir);
  SafetensorsFile st = SafetensorsFile::open(file.string());
  std::set<std::string> loaded;
  for (const TensorEntry& e : st.entries()) {
    auto it = expected.find(e.name);
    PX_CHECK(it != expected.end(), "{}: unexpected tensor '{}' for this model's LoRA targets",
             file.string(), e.name);
    const HfTensor& t = *it->second;
    PX_CHECK(e.shape == t.shape, "{}: tensor '{}' has shape [{}], the config implies [{}]",
             file.string(), e.name, fmt::join(e.shape, ", "), fmt::join(t.shape, ", "));
    loaded.insert(e.name);
    if (model.params().find(t.parts[0]) < 0) continue;  // another pipeline stage's
    scatter_hf_slices(st, e, model.params(), t);
  }
  for (const HfTensor& t : layout)
    PX_CHECK(loaded.contains(t.name), "adapter '{}' lacks tensor '{}'", dir, t.name);
}

int export_merged_lora(const std::string& base_dir, const std::string& adapter_dir,
                       const std::string& out_dir, DType dtype) {
  ModelConfig cfg = read_hf_model_config(base_dir);
  cfg.lora = read_peft_config(adapter_dir, cfg);
  Allocator alloc;
  Transformer model(cfg, alloc);
  load_hf_weights(base_dir, model);
  load_peft_adapter(adapter_dir, model);
  const int merged = merge_lora(model.params(), model.base_params(), cfg.lora.scale());
  save_hf_model(out_dir, model, dtype);  // the base weights only, now merged
  return merged;
}

}  // namespace parallm
