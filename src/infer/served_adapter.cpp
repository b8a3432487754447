// ServedAdapter (see served_adapter.h).
#include "infer/served_adapter.h"

#include <filesystem>
#include <map>
#include <set>

#include "base/error.h"
#include "io/hf_slices.h"
#include "io/peft_adapter.h"
#include "io/safetensors.h"

namespace fs = std::filesystem;

namespace parallm {

std::shared_ptr<const ServedAdapter> ServedAdapter::load(const std::string& dir, Transformer& model,
                                                         int64_t max_rank) {
  PX_CHECK(model.whole() && !model.tp().active(),
           "LoRA adapters are served by one process only (tp 1, pp 1), not yet under tp or pp");
  PX_CHECK(fs::is_directory(dir), "adapter directory '{}' does not exist", dir);
  if (model.config().arch == Arch::GPT2) return load_gpt2(dir, model, max_rank);
  std::shared_ptr<ServedAdapter> a(new ServedAdapter());
  a->dir_ = dir;
  ModelConfig cfg = model.config();
  cfg.lora = read_peft_config(dir, cfg);
  a->cfg_ = cfg.lora;
  PX_CHECK(max_rank <= 0 || cfg.lora.rank <= max_rank,
           "{}: r {} is above --max-lora-rank ({})", (fs::path(dir) / "adapter_config.json").string(),
           cfg.lora.rank, max_rank);
  const std::vector<HfTensor> layout = peft_layout(cfg);
  const fs::path file = fs::path(dir) / "adapter_model.safetensors";
  PX_CHECK(fs::exists(file), "adapter directory '{}' has no adapter_model.safetensors", dir);
  SafetensorsFile st = SafetensorsFile::open(file.string());
  std::map<std::string, const HfTensor*> expected;
  a->factors_ = std::make_unique<ParameterSet>();
  for (const HfTensor& t : layout) {
    expected[t.name] = &t;
    a->factors_->add({.name = t.parts[0], .shape = t.shape, .init = InitKind::Zeros});
  }
  a->factors_->allocate(model.allocator(), false);
  std::set<std::string> loaded;
  for (const TensorEntry& e : st.entries()) {
    const auto it = expected.find(e.name);
    PX_CHECK(it != expected.end(), "{}: unexpected tensor '{}' for this adapter's target modules",
             file.string(), e.name);
    PX_CHECK(e.shape == it->second->shape, "{}: tensor '{}' has shape [{}], the model needs [{}]",
             file.string(), e.name, fmt::join(e.shape, ", "), fmt::join(it->second->shape, ", "));
    scatter_hf_slices(st, e, *a->factors_, *it->second);
    loaded.insert(e.name);
  }
  for (const HfTensor& t : layout)
    PX_CHECK(loaded.contains(t.name), "{}: tensor '{}' is missing", file.string(), t.name);
  // One table entry per adapted linear: "<stem>.lora_A" (r, in) and "<stem>.lora_B" (out, r).
  const ParameterSet& ps = *a->factors_;
  a->table_.scale = cfg.lora.scale();
  for (int i = 0; i < ps.size(); ++i) {
    const std::string& name = ps.spec(i).name;
    if (!name.ends_with(".lora_A")) continue;
    const std::string stem = name.substr(0, name.size() - 7);
    const int bi = ps.find(stem + ".lora_B");
    PX_CHECK(bi >= 0, "internal: adapter factor '{}' has no B", name);
    PX_CHECK(model.base_params().find(stem + ".weight") >= 0,
             "internal: adapter linear '{}' is not in the model", stem);
    const std::vector<int64_t>& sa = ps.spec(i).shape;
    const std::vector<int64_t>& sb = ps.spec(bi).shape;
    const bool fresh = a->table_.sites
                           .emplace(lora_site(stem), LoraFactors{ps.value(ParamRef{i}),
                                                                 ps.value(ParamRef{bi}), sa[0],
                                                                 sa[1], sb[0]})
                           .second;
    PX_CHECK(fresh, "internal: two adapted linears share the site of '{}'", stem);
  }
  return a;
}

int64_t ServedAdapter::bytes() const { return factors_->total_numel() * 4; }

}  // namespace parallm
