// Distributed checkpoint loading (see checkpoint_load.h).
#include "checkpoint/checkpoint_load.h"

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>
#include <set>

#include "base/error.h"
#include "io/checkpoint/checkpoint_dir.h"
#include "io/checkpoint/manifest.h"
#include "io/hf_layout.h"
#include "nn/op_buffers.h"

namespace fs = std::filesystem;

namespace parallm {

bool has_checkpoint(const std::string& path) { return resolve_checkpoint(path).has_value(); }

namespace {
TrainingState read_state_file(const fs::path& state_path) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(std::ifstream(state_path));
  } catch (const nlohmann::json::exception& e) {
    PX_FAIL("{}: malformed JSON: {}", state_path.string(), e.what());
  }
  return training_state_from_json(j, state_path.string());
}
}  // namespace

std::optional<PeekedCheckpoint> peek_checkpoint(const std::string& path) {
  auto dir = resolve_checkpoint(path);
  if (!dir) return std::nullopt;
  const fs::path state_path = fs::path(*dir) / kTrainStateName;
  PX_CHECK(fs::exists(state_path), "checkpoint '{}' has no {}", *dir, kTrainStateName);
  return PeekedCheckpoint{*dir, read_state_file(state_path)};
}

OpenedCheckpoint open_checkpoint(const std::string& path, comm::Communicator* world) {
  const int rank = world ? world->rank() : 0;
  const int size = world ? world->size() : 1;
  auto dir = resolve_checkpoint(path);
  PX_CHECK(dir.has_value(), "no checkpoint in '{}' (no '{}' file and no step directory)", path,
           kLatestName);
  PX_CHECK(fs::is_directory(*dir), "checkpoint '{}' does not exist", *dir);
  Manifest m = read_manifest(*dir);
  // Sizes everywhere (cheap, catches truncation), checksums split over ranks.
  int bad = INT_MAX;
  for (size_t i = 0; i < m.files.size() && bad == INT_MAX; ++i)
    if (!check_file_size(*dir, m.files[i]).empty()) bad = static_cast<int>(i);
  for (size_t i = 0; i < m.files.size() && bad == INT_MAX; ++i)
    if (static_cast<int>(i) % size == rank && !verify_file(*dir, m.files[i]).empty())
      bad = static_cast<int>(i);
  if (world) world->all_reduce(&bad, 1, DType::I32, comm::ReduceOp::Min);
  if (bad != INT_MAX) PX_FAIL("{}", verify_file(*dir, m.files[static_cast<size_t>(bad)]));

  OpenedCheckpoint ck;
  ck.dir = *dir;
  const fs::path state_path = fs::path(*dir) / kTrainStateName;
  bool listed = false;
  std::vector<std::string> shards;
  for (const auto& e : m.files) {
    if (e.file == kTrainStateName)
      listed = true;
    else
      shards.push_back((fs::path(*dir) / e.file).string());
  }
  PX_CHECK(listed, "{}: the manifest does not list {}", (fs::path(*dir) / kManifestName).string(),
           kTrainStateName);
  ck.state = read_state_file(state_path);
  PX_CHECK(ck.state.step == m.step, "{}: step {} disagrees with the manifest's {}",
           state_path.string(), ck.state.step, m.step);
  ck.shards = std::make_unique<ShardSet>(shards);
  return ck;
}

namespace {

// ShardSet::fill into dst, a buffer of stream st's device: on a device through
// a host copy that starts as dst's values (fill leaves padded rows untouched).
void fill_on(const ops::Stream& st, const ShardSet& set, const std::string& kind,
             const std::string& tensor, const TensorSlice& want, float* dst, int64_t vocab) {
  const HostView<float> view(st, dst, want.numel());
  set.fill(kind, tensor, want, view.get(), vocab);
  view.write_back();
}

}  // namespace

void load_checkpoint_values(const OpenedCheckpoint& ck, const ParameterSet& ps, int64_t vocab) {
  float* flat = ps.flat_values().data<float>();
  for (int i = 0; i < ps.size(); ++i) {
    const ParamSpec& s = ps.spec(i);
    TensorSlice want = TensorSlice::of_box(s.global_shape, s.shape, s.shard_dim, s.shard_begin,
                                           s.tp_dim, s.tp_begin);
    fill_on(ps.stream(), *ck.shards, "param", s.name, want, flat + ps.offset(i), vocab);
  }
}

void check_checkpoint_covers_model(const OpenedCheckpoint& ck, const ParameterSet& ps,
                                   const ModelConfig& cfg) {
  // The model's global parameter names: those of its HF layout (every
  // internal tensor is part of one HF tensor), whichever stage holds them.
  std::set<std::string> model_names;
  for (const HfTensor& t : hf_layout(cfg)) model_names.insert(t.parts.begin(), t.parts.end());
  if (cfg.lora.enabled()) {  // a LoRA checkpoint holds the adapters of the targeted weights
    std::set<std::string> adapters;
    for (const std::string& w : model_names) {
      const size_t dot = w.rfind(".weight");
      if (dot == std::string::npos || dot + 7 != w.size()) continue;
      const std::string stem = w.substr(0, dot);
      const std::string kind = stem.substr(stem.rfind('.') + 1);
      if (std::ranges::count(lora_target_kinds(), kind) == 0 || !cfg.lora.targets_kind(kind))
        continue;
      adapters.insert(stem + ".lora_A");
      adapters.insert(stem + ".lora_B");
    }
    model_names = std::move(adapters);
  }
  const auto saved = ck.shards->tensors("param");
  const std::set<std::string> saved_names(saved.begin(), saved.end());
  for (const auto& name : saved_names)
    PX_CHECK(model_names.count(name) > 0, "{}: tensor '{}' is not a parameter of this model",
             ck.dir, name);
  for (int i = 0; i < ps.size(); ++i)
    PX_CHECK(saved_names.count(ps.spec(i).name) > 0,
             "{}: the checkpoint has no tensor '{}', a parameter of this model", ck.dir,
             ps.spec(i).name);
}

void load_checkpoint_optimizer(const OpenedCheckpoint& ck, const ParameterSet& ps, Optimizer& opt,
                               int64_t vocab) {
  const std::string kind(optimizer_name(opt.kind()));
  PX_CHECK(ck.state.optimizer == kind,
           "{}: the checkpoint holds {} state, but this run uses --optimizer {}", ck.dir,
           ck.state.optimizer, kind);
  for (const OptimizerState& st : opt.state()) {
    float* base = st.tensor->data<float>();  // read in order, the elements of st.spans
    for (const FlatSpan& sp : st.spans) {
      for (int i = 0; i < ps.size(); ++i) {
        const int64_t off = ps.offset(i);
        const int64_t a = std::max(sp.begin, off), b = std::min(sp.end, off + ps.numel(i));
        if (b <= a) continue;
        const ParamSpec& s = ps.spec(i);
        TensorSlice want = TensorSlice::of_box(s.global_shape, s.shape, s.shard_dim, s.shard_begin,
                                               s.tp_dim, s.tp_begin)
                               .sub_range(a - off, b - off);
        fill_on(ps.stream(), *ck.shards, st.name, s.name, want, base + (a - sp.begin), vocab);
      }
      base += sp.size();
    }
  }
  opt.set_steps_taken(ck.state.optimizer_step);
}

}  // namespace parallm
