#include "io/hf_model.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "io/hf_config.h"
#include "io/hf_layout.h"
#include "io/hf_slices.h"
#include "io/safetensors.h"
#include "tensor/half.h"

namespace fs = std::filesystem;

namespace parallm {
void write_dir_atomically(const std::string& dir,
                          const std::function<void(const fs::path&)>& fill) {
  fs::path target = fs::path(dir).lexically_normal();
  if (target.filename().empty()) target = target.parent_path();
  fs::path tmp = target;
  tmp += ".tmp." + std::to_string(getpid());
  std::error_code ec;
  fs::remove_all(tmp, ec);
  try {
    if (!target.parent_path().empty()) fs::create_directories(target.parent_path());
    fs::create_directories(tmp);
    fill(tmp);
    if (fs::exists(target)) {
      fs::path old = target;
      old += ".old." + std::to_string(getpid());
      fs::rename(target, old);
      fs::rename(tmp, target);
      fs::remove_all(old);
    } else {
      fs::rename(tmp, target);
    }
  } catch (const fs::filesystem_error& e) {
    fs::remove_all(tmp, ec);
    PX_FAIL("cannot write model directory '{}': {}", dir, e.what());
  } catch (...) {
    fs::remove_all(tmp, ec);
    throw;
  }
}

void save_hf_model(const std::string& dir, const Transformer& model, DType dtype,
                   int64_t max_shard_bytes) {
  PX_CHECK(dtype == DType::F32 || dtype == DType::BF16, "models are saved as F32 or BF16, not {}",
           dtype_name(dtype));
  const ModelConfig& cfg = model.config();
  check_hf_moe(cfg);  // what Mixtral's or Qwen2-MoE's config cannot say
  auto layout = hf_layout(cfg);
  std::vector<std::vector<float>> buffers(layout.size());
  // Tensors in layout order, a new file whenever the next would pass the limit.
  std::vector<SafetensorsWriter> files(1);
  nlohmann::json weight_map = nlohmann::json::object();
  std::vector<size_t> file_of(layout.size());
  int64_t in_file = 0, total = 0;
  for (size_t i = 0; i < layout.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : layout[i].shape) n *= d;
    const int64_t bytes = n * static_cast<int64_t>(dtype_size(dtype));
    if (max_shard_bytes > 0 && in_file > 0 && in_file + bytes > max_shard_bytes) {
      files.emplace_back();
      in_file = 0;
    }
    in_file += bytes;
    total += bytes;
    buffers[i].resize(static_cast<size_t>(n));
    gather_hf_tensor(model.base_params(), layout[i], false, buffers[i].data());
    files.back().add_f32_as(layout[i].name, dtype, layout[i].shape, buffers[i].data());
    file_of[i] = files.size() - 1;
  }
  auto file_name = [&](size_t k) {
    return files.size() == 1
               ? std::string("model.safetensors")
               : fmt::format("model-{:05d}-of-{:05d}.safetensors", k + 1, files.size());
  };
  for (size_t i = 0; i < layout.size(); ++i) weight_map[layout[i].name] = file_name(file_of[i]);
  std::string torch_dtype = dtype == DType::F32 ? "float32" : "bfloat16";
  write_dir_atomically(dir, [&](const fs::path& tmp) {
    std::ofstream(tmp / "config.json") << hf_config_json(cfg, torch_dtype).dump(2) << "\n";
    for (size_t k = 0; k < files.size(); ++k) {
      files[k].set_metadata("format", "pt");
      files[k].set_metadata("producer", "parallm");
      files[k].write((tmp / file_name(k)).string());
    }
    if (files.size() > 1) {
      nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
      std::ofstream(tmp / "model.safetensors.index.json") << index.dump(2) << "\n";
    }
  });
}

ModelConfig read_hf_model_config(const std::string& dir) {
  PX_CHECK(fs::is_directory(dir), "model directory '{}' does not exist", dir);
  fs::path cfg = fs::path(dir) / "config.json";
  PX_CHECK(fs::exists(cfg), "model directory '{}' has no config.json", dir);
  return read_hf_config(cfg.string());
}

namespace {

// The safetensors files of a model: model.safetensors, or the files named by
// model.safetensors.index.json for sharded checkpoints.
std::vector<std::string> weight_files(const std::string& dir) {
  fs::path single = fs::path(dir) / "model.safetensors";
  if (fs::exists(single)) return {single.string()};
  fs::path index = fs::path(dir) / "model.safetensors.index.json";
  PX_CHECK(fs::exists(index),
           "model directory '{}' has neither model.safetensors nor "
           "model.safetensors.index.json",
           dir);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(std::ifstream(index));
  } catch (const nlohmann::json::parse_error& e) {
    PX_FAIL("{}: malformed JSON: {}", index.string(), e.what());
  }
  PX_CHECK(j.contains("weight_map") && j["weight_map"].is_object(), "{}: no weight_map object",
           index.string());
  std::set<std::string> files;
  for (const auto& [name, file] : j["weight_map"].items()) {
    PX_CHECK(file.is_string(), "{}: weight_map['{}'] is not a file name", index.string(), name);
    files.insert((fs::path(dir) / file.get<std::string>()).string());
  }
  return {files.begin(), files.end()};
}

// Whether this model holds HF tensor t: a pipeline stage holds a subset (a
// tied table's copy on the last stage has the table's name, so it is
// filled too); a whole model holds everything (a missing part is an error).
bool holds_any_part(const Transformer& model, const HfTensor& t) {
  if (model.whole()) return true;
  for (const auto& name : t.parts)
    if (model.base_params().find(name) >= 0) return true;
  return false;
}

}  // namespace

void load_hf_weights(const std::string& dir, Transformer& model) {
  const ModelConfig& cfg = model.config();
  check_hf_moe(cfg);
  auto layout = hf_layout(cfg);
  std::map<std::string, const HfTensor*> expected;
  for (const auto& t : layout) expected[t.name] = &t;
  std::set<std::string> loaded;
  for (const auto& file : weight_files(dir)) {
    SafetensorsFile st = SafetensorsFile::open(file);
    for (const auto& e : st.entries()) {
      std::string name = hf_canonical_name(cfg, e.name);
      auto it = expected.find(name);
      if (it == expected.end()) {
        PX_CHECK(hf_ignorable(cfg, name), "{}: unexpected tensor '{}' for a {} model", file, e.name,
                 arch_name(cfg.arch));
        continue;
      }
      const HfTensor& t = *it->second;
      PX_CHECK(e.shape == t.shape, "{}: tensor '{}' has shape [{}], the config implies [{}]", file,
               e.name, fmt::join(e.shape, ", "), fmt::join(t.shape, ", "));
      PX_CHECK(e.dtype == DType::F32 || e.dtype == DType::BF16 || e.dtype == DType::F16 ||
                   e.dtype == DType::F64,
               "{}: tensor '{}' has dtype {}, expected a floating-point type", file, e.name,
               dtype_name(e.dtype));
      PX_CHECK(loaded.insert(name).second, "{}: tensor '{}' appears twice", file, e.name);
      if (!holds_any_part(model, t)) continue;  // another pipeline stage's tensor
      scatter_hf_slices(st, e, model.base_params(), t);
    }
  }
  for (const auto& t : layout)
    PX_CHECK(loaded.count(t.name) > 0, "model '{}' lacks tensor '{}'", dir, t.name);
}

}  // namespace parallm
