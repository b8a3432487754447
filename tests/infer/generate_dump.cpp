// Generation dump for the parity test with transformers (generate_parity.py):
// loads an HF directory, generates greedily from every prompt in one batch
// (tensor parallel over the job's ranks under mpirun), and writes each
// prompt's tokens and the logits of every step as JSON (rank 0).
// Usage: generate_dump MODEL_DIR PROMPTS_JSON OUT_JSON
//   PROMPTS_JSON: {"prompts": [[ids...], ...], "max_new_tokens": N}
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>

#include "comm/mpi/mpi_runtime.h"
#include "infer/generator.h"
#include "infer/inference_model.h"

using namespace parallm;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: generate_dump MODEL_DIR PROMPTS_JSON OUT_JSON\n";
    return 2;
  }
  const std::string dir = argv[1], out_path = argv[3];
  std::ifstream in(argv[2]);
  const nlohmann::json req = nlohmann::json::parse(in);
  const auto prompts = req["prompts"].get<std::vector<std::vector<int32_t>>>();
  return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
    auto world = rt.world();
    const TpGroup tp{.comm = world->size() > 1 ? world.get() : nullptr};
    InferenceModel im({.hf_dir = dir}, tp, Precision::FP32, world.get());
    GenerateOptions o;
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
    if (tp.rank() != 0) return 0;
    nlohmann::json out{{"tokens", nlohmann::json::array()}, {"logits", logits}};
    for (const Generation& x : g) out["tokens"].push_back(x.tokens);
    std::ofstream(out_path) << out.dump();
    std::cerr << "generate_dump: tp " << tp.size() << ", prefill " << st.prefill_tokens
              << " tokens in " << st.prefill_s << " s, decode " << st.decode_tokens << " tokens in "
              << st.decode_s << " s\n";
    return 0;
  });
}
