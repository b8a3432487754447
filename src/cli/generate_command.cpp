// `parallm generate --model HF_DIR | --checkpoint CKPT --prompt TEXT ...`:
// text generation with sampling flags; under mpirun the ranks form a
// tp x pp grid (--tp x --pp must equal the number of ranks).
#include <iostream>
#include <memory>

#include "base/env.h"
#include "base/error.h"
#include "cli/commands.h"
#include "comm/mpi/mpi_runtime.h"
#include "device/cuda/open_job_device.h"
#include "train/config/training_config.h"
#include "infer/generate_job.h"
#include "train/config/inference_flags.h"
#include "train/config/speculative_flags.h"

namespace parallm::cli {

void add_generate_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    GenerateJobOptions job;
    SpeculativeFlags speculative;
  };
  auto f = std::make_shared<Flags>();
  GenerateJobOptions& j = f->job;
  SamplingParams& s = j.gen.sampling;
  CLI::App* sub = app.add_subcommand("generate", "generate text from prompts");
  auto* model = sub->add_option("--model", j.source.hf_dir,
                               "Hugging Face model directory, or a llama.cpp .gguf file (docs/gguf.md)");
  sub->add_option("--checkpoint", j.source.checkpoint, "training checkpoint directory")
      ->excludes(model);
  sub->add_option("--prompt", j.prompts, "prompt text (repeatable)");
  sub->add_option("--prompts-file", j.prompts_file, "file with one prompt per line");
  sub->add_option("--tokenizer", j.tokenizer,
                  "directory with tokenizer.json (default: the --model directory's or .gguf file's, else bytes)");
  sub->add_flag("--chat", j.chat,
                "send each prompt as a user message through the tokenizer_config.json chat "
                "template (plain text when there is none)");
  sub->add_option("--system", j.system, "with --chat: a system message before each prompt");
  sub->add_option("--max-new-tokens", j.gen.max_new_tokens, "tokens to generate per prompt");
  sub->add_option("--temperature", s.temperature, "0: greedy");
  sub->add_option("--top-k", s.top_k, "keep the k most likely tokens (0: off)");
  sub->add_option("--top-p", s.top_p, "nucleus sampling mass (1: off)");
  sub->add_option("--min-p", s.min_p, "keep p >= min_p * max p (0: off)");
  sub->add_option("--repetition-penalty", s.repetition_penalty, "HF/CTRL penalty (1: off)");
  sub->add_option("--presence-penalty", s.presence_penalty, "OpenAI presence penalty");
  sub->add_option("--frequency-penalty", s.frequency_penalty, "OpenAI frequency penalty");
  sub->add_option("--seed", s.seed, "sampling seed");
  sub->add_option("--logprobs", s.logprobs, "report the N most likely tokens per step (JSON)");
  sub->add_option("--stop", j.gen.stop_strings, "stop string (repeatable)");
  add_speculative_flags(sub, f->speculative);
  sub->add_option("--dtype", j.dtype, "fp32 | bf16 (GEMMs)");
  add_kv_dtype_flag(sub, j.gen.kv_dtype);
  add_quantize_flag(sub, j.source.quantize);
  sub->add_flag("--json", j.json, "one JSON object per prompt, even for one prompt");
  sub->add_option("--threads", j.threads, "CPU threads");
  sub->add_option("--tp", j.tp, "tensor parallel size");
  sub->add_option("--pp", j.pp, "pipeline parallel size (tp x pp = number of ranks)");
  sub->add_option("--device", j.device,
                  "cpu (default), cuda (this rank's GPU, docs/cuda.md) or test (the CPU test device, "
                  "whose memory host code cannot read: docs/devices.md)");
  reg.actions.emplace_back(sub, [f]() {
    const LaunchEnv env = read_launch_env();
    try {
      PX_CHECK(!f->job.source.hf_dir.empty() || !f->job.source.checkpoint.empty(),
               "give --model HF_DIR | FILE.gguf or --checkpoint CKPT_DIR");
      select_gguf(f->job.source);
      const SpeculativeFlags::Resolved spec = f->speculative.resolve();
      f->job.gen.ngram_draft_tokens = spec.ngram;
      f->job.gen.draft_model_tokens = spec.draft_model;
      f->job.draft.hf_dir = f->speculative.draft_model;
      f->job.draft.quantize = f->speculative.draft_quantize;
      select_gguf(f->job.draft);
      PX_CHECK(f->job.tp * f->job.pp == env.world_size,
               "--tp ({}) x --pp ({}) must equal the number of ranks ({})", f->job.tp, f->job.pp,
               env.world_size);
      if (f->job.gen.sampling.logprobs > 0) f->job.json = true;
      f->job.gen.sampling.validate();
    } catch (const Error&) {
      if (env.rank != 0) return 1;
      throw;
    }
    return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
      auto world = rt.world();
      const auto device =
          open_job_device(device_from_name(f->job.device), world.get(), env.local_rank, false);
      return run_generate_job(f->job, world.get(), std::cout, std::cerr, device.get());
    });
  });
}

}  // namespace parallm::cli
