#include "io/hf_model.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "io/hf_config.h"
#include "io/hf_layout.h"
#include "io/safetensors.h"

namespace fs = std::filesystem;

namespace parallm {
namespace {

// Writes into a sibling temporary directory and renames it into place, so a
// failure never leaves a half-written model at `dir`.
void write_dir_atomically(const std::string& dir, const std::function<void(const fs::path&)>& fill) {
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

}  // namespace

void save_hf_model(const std::string& dir, const Transformer& model, DType dtype) {
  PX_CHECK(dtype == DType::F32 || dtype == DType::BF16, "models are saved as F32 or BF16, not {}",
           dtype_name(dtype));
  const ModelConfig& cfg = model.config();
  auto layout = hf_layout(cfg);
  std::vector<std::vector<float>> buffers(layout.size());
  SafetensorsWriter w;
  for (size_t i = 0; i < layout.size(); ++i) {
    int64_t n = 1;
    for (int64_t d : layout[i].shape) n *= d;
    buffers[i].resize(static_cast<size_t>(n));
    gather_hf_tensor(model.params(), layout[i], false, buffers[i].data());
    w.add_f32_as(layout[i].name, dtype, layout[i].shape, buffers[i].data());
  }
  w.set_metadata("format", "pt");
  w.set_metadata("producer", "parallm");
  std::string torch_dtype = dtype == DType::F32 ? "float32" : "bfloat16";
  write_dir_atomically(dir, [&](const fs::path& tmp) {
    std::ofstream(tmp / "config.json") << hf_config_json(cfg, torch_dtype).dump(2) << "\n";
    w.write((tmp / "model.safetensors").string());
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
  PX_CHECK(fs::exists(index), "model directory '{}' has neither model.safetensors nor "
           "model.safetensors.index.json", dir);
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

}  // namespace

void load_hf_weights(const std::string& dir, Transformer& model) {
  const ModelConfig& cfg = model.config();
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
        PX_CHECK(hf_ignorable(cfg, name), "{}: unexpected tensor '{}' for a {} model", file,
                 e.name, arch_name(cfg.arch));
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
      std::vector<float> buf = st.read_as_f32(e);
      scatter_hf_tensor(model.params(), t, buf.data());
    }
  }
  for (const auto& t : layout)
    PX_CHECK(loaded.count(t.name) > 0, "model '{}' lacks tensor '{}'", dir, t.name);
}

}  // namespace parallm
