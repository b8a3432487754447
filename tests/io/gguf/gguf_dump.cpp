// gguf_dump: parallm's side of the GGUF reference tests (gguf_reference.py).
//   dequant FILE OUTDIR        every tensor of FILE as f32 (OUTDIR/NAME.f32),
//                              through ops::dequantize_blocks for block types
//   quantize TYPE IN.f32 OUT   ops::quantize_blocks of IN's values
//   tokenize FILE TEXT...      the file's tokenizer: one JSON id list per TEXT
//   params FILE OUTDIR         the model loaded from FILE (this rank's tp shard
//                              under mpirun): each parameter as f32, a
//                              quantised one through QuantWeight::dequantize_rows,
//                              in OUTDIR/rank{r}/NAME.f32
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <vector>

#include <nlohmann/json.hpp>

#include "comm/mpi/mpi_runtime.h"
#include "comm/rank_groups.h"
#include "grid/rank_grid.h"
#include "infer/inference_model.h"
#include "infer/model_text.h"
#include "io/gguf/gguf_file.h"
#include "ops/quant.h"
#include "tensor/half.h"

using namespace parallm;

namespace {
void write_f32(const std::string& path, const float* p, int64_t n) {
  std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(p), n * 4);
}

int dequant(const std::string& file, const std::string& out) {
  const GgufFile f = GgufFile::open(file);
  std::filesystem::create_directories(out);
  for (const GgufTensorInfo& t : f.tensors()) {
    std::vector<float> v(static_cast<size_t>(t.numel()));
    const auto* b = reinterpret_cast<const uint8_t*>(f.bytes(t).data());
    if (const auto q = ops::quant_type_from_ggml(t.type)) {
      ops::dequantize_blocks(*q, b, t.numel(), v.data());
    } else {
      for (int64_t i = 0; i < t.numel(); ++i) {
        uint16_t h;
        if (t.type == kGgmlF32) {
          std::memcpy(&v[i], b + 4 * i, 4);
          continue;
        }
        std::memcpy(&h, b + 2 * i, 2);
        v[i] = t.type == kGgmlBF16 ? bf16_to_f32(h) : f16_to_f32(h);
      }
    }
    write_f32(out + "/" + t.name + ".f32", v.data(), t.numel());
  }
  return 0;
}

int quantize(const std::string& type, const std::string& in, const std::string& out) {
  std::ifstream f(in, std::ios::binary | std::ios::ate);
  const int64_t n = static_cast<int64_t>(f.tellg()) / 4;
  f.seekg(0);
  std::vector<float> x(static_cast<size_t>(n));
  f.read(reinterpret_cast<char*>(x.data()), n * 4);
  const ops::QuantType t = ops::quant_type_from_name(type);
  const auto& tr = ops::quant_traits(t);
  std::vector<uint8_t> b(static_cast<size_t>(n / tr.block_elems * tr.block_bytes));
  ops::quantize_blocks(t, x.data(), n, b.data());
  std::ofstream(out, std::ios::binary).write(reinterpret_cast<const char*>(b.data()), b.size());
  return 0;
}

int tokenize(const std::string& file, int argc, char** argv) {
  const auto tok = load_tokenizer_or_bytes(file);
  for (int i = 0; i < argc; ++i)
    std::cout << nlohmann::json(tok->encode(argv[i], true)).dump() << "\n";
  return 0;
}

int params(const std::string& file, const std::string& out, int tp) {
  return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
    auto world = rt.world();
    const int ranks = world->size(), rank = world->rank();
    const RankGrid grid(GridSizes{.tp = tp, .pp = ranks / tp}, ranks);
    const RankGroups groups = split_groups(grid, world.get(), rank);
    const TpGroup tpg{.comm = tp > 1 ? groups.tp.get() : nullptr};
    InferenceModel im({.gguf = file}, {.tp = tpg, .pp_rank = grid.coord(rank).pp_rank,
                                       .pp = ranks / tp}, Precision::FP32, world.get());
    const ParameterSet& ps = im.model().base_params();
    const std::string dir = out + "/rank" + std::to_string(rank);
    std::filesystem::create_directories(dir);
    nlohmann::json shapes = nlohmann::json::object();
    for (int i = 0; i < ps.size(); ++i) shapes[ps.spec(i).name] = ps.spec(i).shape;
    std::ofstream(dir + "/shapes.json") << shapes.dump();
    for (int i = 0; i < ps.size(); ++i) {
      std::vector<float> v(static_cast<size_t>(ps.numel(i)));
      if (const ops::QuantWeight* q = ps.quant(ParamRef{i}))
        q->dequantize_rows(0, q->rows(), v.data());
      else
        std::memcpy(v.data(), ps.value(ParamRef{i}), v.size() * 4);
      write_f32(dir + "/" + ps.spec(i).name + ".f32", v.data(), ps.numel(i));
    }
    return 0;
  });
}
}  // namespace

int main(int argc, char** argv) {
  try {
    const std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "dequant" && argc == 4) return dequant(argv[2], argv[3]);
    if (mode == "quantize" && argc == 5) return quantize(argv[2], argv[3], argv[4]);
    if (mode == "tokenize" && argc >= 3) return tokenize(argv[2], argc - 3, argv + 3);
    if (mode == "params" && argc == 5) return params(argv[2], argv[3], std::stoi(argv[4]));
    std::cerr << "usage: gguf_dump dequant FILE OUTDIR | quantize TYPE IN OUT | tokenize FILE "
                 "TEXT... | params FILE OUTDIR TP\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
