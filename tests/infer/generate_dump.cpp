// Generation dump for the parity test with transformers (generate_parity.py):
// loads an HF directory, generates greedily from every prompt in one batch
// (a tp x pp grid of the job's ranks under mpirun), and writes each
// prompt's tokens and the logits of every step as JSON (the sampling rank).
// Usage: generate_dump MODEL_DIR PROMPTS_JSON OUT_JSON [TP PP]
//   PROMPTS_JSON: {"prompts": [[ids...], ...], "max_new_tokens": N}
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

#include "comm/mpi/mpi_runtime.h"
#include "infer/generator.h"
#include "infer/inference_model.h"
#include "comm/rank_groups.h"

using namespace parallm;

int main(int argc, char** argv) {
  if (argc != 4 && argc != 6) {
    std::cerr << "usage: generate_dump MODEL_DIR PROMPTS_JSON OUT_JSON [TP PP]\n";
    return 2;
  }
  const int tp_size = argc == 6 ? std::stoi(argv[4]) : 1, pp = argc == 6 ? std::stoi(argv[5]) : 1;
  const std::string dir = argv[1], out_path = argv[3];
  std::ifstream in(argv[2]);
  const nlohmann::json req = nlohmann::json::parse(in);
  const auto prompts = req["prompts"].get<std::vector<std::vector<int32_t>>>();
  return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
    auto world = rt.world();
    const RankGrid grid(GridSizes{.tp = tp_size, .pp = pp}, world->size());
    const RankGroups groups = split_groups(grid, world.get(), world->rank());
    const TpGroup tp{.comm = tp_size > 1 ? groups.tp.get() : nullptr};
    InferenceModel im({.hf_dir = dir},
                      {.tp = tp, .pp_rank = grid.coord(world->rank()).pp_rank, .pp = pp},
                      Precision::FP32, world.get());
    GenerateOptions o;
    o.pp = pp > 1 ? groups.pp.get() : nullptr;
    o.max_new_tokens = req["max_new_tokens"].get<int64_t>();
    o.sampling.temperature = 0.0;
    const int64_t V = im.model().config().vocab_size;
    std::vector<std::vector<std::vector<float>>> logits(prompts.size());
    o.on_logits = [&](const std::vector<int>& seqs, const Tensor& l) {
      for (size_t r = 0; r < seqs.size(); ++r) {
        const float* row = l.data<float>() + static_cast<int64_t>(r) * V;
        logits[static_cast<size_t>(seqs[r])].emplace_back(row, row + V);
      }
    };
    GenerationStats st;
    const std::vector<Generation> g = generate(im.model(), prompts, o, &st);
    if (!is_sampling_rank(im.model())) return 0;
    nlohmann::json out{{"tokens", nlohmann::json::array()}, {"logits", logits}};
    for (const Generation& x : g) out["tokens"].push_back(x.tokens);
    std::ofstream(out_path) << out.dump();
    std::cerr << "generate_dump: tp " << tp.size() << ", pp " << pp << ", prefill "
              << st.prefill_tokens << " tokens in " << st.prefill_s << " s, decode "
              << st.decode_tokens << " tokens in " << st.decode_s << " s\n";
    return 0;
  });
}
