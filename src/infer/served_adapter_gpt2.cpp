// ServedAdapter::load_gpt2: a PEFT adapter of a GPT-2 model served beside
// it. Hugging Face's GPT-2 keeps q, k and v in one Conv1D, c_attn, and PEFT
// gives it one A (r, C) and one B (3C, r); parallm's q, k and v linears
// each add s (x A^T) B_p^T with the same A and their rows of B (q: rows
// [0, C), k: [C, 2C), v: [2C, 3C)), which is exactly c_attn's term cut by
// output rows. c_proj (attention's and the MLP's: PEFT matches module names
// by suffix) and c_fc map one to one. Tensors are lora_A (r, in) and lora_B
// (out, r) as for any linear; Conv1D's transposed weight does not change them.
#include <filesystem>
#include <map>
#include <set>

#include "base/error.h"
#include "infer/served_adapter.h"
#include "io/hf_layout.h"
#include "io/hf_slices.h"
#include "io/peft_adapter.h"
#include "io/safetensors.h"

namespace fs = std::filesystem;

namespace parallm {
namespace {
const std::set<std::string>& gpt2_modules() {
  static const std::set<std::string> m = {"c_attn", "c_proj", "c_fc"};
  return m;
}
// "transformer.h.3.attn.c_attn.weight" -> "c_attn"
std::string module_of(const std::string& hf_weight) {
  const std::string stem = hf_weight.substr(0, hf_weight.rfind(".weight"));
  return stem.substr(stem.rfind('.') + 1);
}
}  // namespace

std::shared_ptr<const ServedAdapter> ServedAdapter::load_gpt2(const std::string& dir,
                                                              Transformer& model,
                                                              int64_t max_rank) {
  const ModelConfig& cfg = model.config();
  PX_CHECK(!cfg.moe.enabled(), "PEFT adapters of MoE models are not served yet");
  const PeftConfigFile f = read_peft_config_file(dir);
  const int64_t r = f.lora.rank;
  PX_CHECK(max_rank <= 0 || r <= max_rank, "{}: r {} is above --max-lora-rank ({})", f.path, r,
           max_rank);
  std::set<std::string> targets;
  for (const std::string& m : f.modules) {
    if (m == kLoraAllLinear) {
      targets = gpt2_modules();
      continue;
    }
    PX_CHECK(gpt2_modules().contains(m),
             "{}: target module '{}' is not a linear of a gpt2 model (its linears: c_attn, "
             "c_proj, c_fc)",
             f.path, m);
    targets.insert(m);
  }
  std::shared_ptr<ServedAdapter> a(new ServedAdapter());
  a->dir_ = dir;
  a->cfg_ = f.lora;
  // Each adapted HF weight: its A and B as whole tensors named by their keys.
  struct Site {
    std::string a_key, b_key;
    std::vector<std::string> parts;  // internal weights, split along B's rows
  };
  std::vector<Site> sites;
  std::vector<HfTensor> expected;
  a->factors_ = std::make_unique<ParameterSet>();
  for (const HfTensor& t : hf_layout(cfg)) {
    if (t.shape.size() != 2 || !t.transpose || t.name.find("transformer.h.") != 0 ||
        !targets.contains(module_of(t.name)))
      continue;
    const int64_t in = t.shape[0], out = t.shape[1];  // Conv1D: (in, out)
    const std::string stem = "base_model.model." + t.name.substr(0, t.name.size() - 7);
    Site s{stem + ".lora_A.weight", stem + ".lora_B.weight", t.parts};
    expected.push_back({s.a_key, {r, in}, {s.a_key}});
    expected.push_back({s.b_key, {out, r}, {s.b_key}});
    a->factors_->add({.name = s.a_key, .shape = {r, in}, .init = InitKind::Zeros});
    a->factors_->add({.name = s.b_key, .shape = {out, r}, .init = InitKind::Zeros});
    sites.push_back(std::move(s));
  }
  a->factors_->allocate(model.allocator(), false);
  const fs::path file = fs::path(dir) / "adapter_model.safetensors";
  PX_CHECK(fs::exists(file), "adapter directory '{}' has no adapter_model.safetensors", dir);
  SafetensorsFile st = SafetensorsFile::open(file.string());
  std::map<std::string, const HfTensor*> by_name;
  for (const HfTensor& t : expected) by_name[t.name] = &t;
  std::set<std::string> loaded;
  for (const TensorEntry& e : st.entries()) {
    const auto it = by_name.find(e.name);
    PX_CHECK(it != by_name.end(), "{}: unexpected tensor '{}' for this adapter's target modules",
             file.string(), e.name);
    PX_CHECK(e.shape == it->second->shape, "{}: tensor '{}' has shape [{}], the model needs [{}]",
             file.string(), e.name, fmt::join(e.shape, ", "), fmt::join(it->second->shape, ", "));
    scatter_hf_slices(st, e, *a->factors_, *it->second);
    loaded.insert(e.name);
  }
  for (const HfTensor& t : expected)
    PX_CHECK(loaded.contains(t.name), "{}: tensor '{}' is missing", file.string(), t.name);
  const ParameterSet& ps = *a->factors_;
  const ParameterSet& base = model.base_params();
  a->table_.scale = f.lora.scale();
  for (const Site& s : sites) {
    const int ai = ps.find(s.a_key), bi = ps.find(s.b_key);
    const int64_t in = ps.spec(ai).shape[1];
    int64_t row = 0;  // B's first row of this part
    for (const std::string& part : s.parts) {
      const int wi = base.find(part);
      PX_CHECK(wi >= 0, "internal: adapted weight '{}' is not in the model", part);
      const int64_t out = base.spec(wi).shape[0];
      const std::string stem = part.substr(0, part.size() - 7);  // drop ".weight"
      const bool fresh =
          a->table_.sites
              .emplace(lora_site(stem), LoraFactors{ps.value(ParamRef{ai}),
                                                    ps.value(ParamRef{bi}) + row * r, r, in, out})
              .second;
      PX_CHECK(fresh, "internal: two adapted linears share the site of '{}'", stem);
      row += out;
    }
    PX_CHECK(row == ps.spec(bi).shape[0], "internal: {}'s parts cover {} of its {} rows", s.b_key,
             row, ps.spec(bi).shape[0]);
  }
  return a;
}

}  // namespace parallm
