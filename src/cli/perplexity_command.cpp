// `parallm perplexity --model HF_DIR | FILE.gguf --text FILE [--ctx 128] ...`:
// the text's perplexity as llama.cpp's llama-perplexity scores it
// (infer/perplexity.h: ctx-token chunks, each scoring its second half), so
// a GGUF file's figure compares with llama.cpp's on the same file and text.
#include <iostream>
#include <memory>

#include "base/error.h"
#include "cli/commands.h"
#include "infer/perplexity.h"
#include "train/config/inference_flags.h"

namespace parallm::cli {

void add_perplexity_command(CLI::App& app, CommandRegistry& reg) {
  auto f = std::make_shared<PerplexityJobOptions>();
  CLI::App* sub = app.add_subcommand(
      "perplexity", "perplexity of a text file, scored as llama.cpp's llama-perplexity");
  auto* model = sub->add_option("--model", f->source.hf_dir,
                                "Hugging Face model directory, or a llama.cpp .gguf file");
  sub->add_option("--checkpoint", f->source.checkpoint, "training checkpoint directory")
      ->excludes(model);
  add_quantize_flag(sub, f->source.quantize);
  sub->add_option("--text,-f", f->text_path, "text file (one trailing newline is dropped)")
      ->required();
  sub->add_option("--tokenizer", f->tokenizer,
                  "directory with tokenizer.json (default: the model's, else bytes)");
  sub->add_option("--ctx,-c", f->ppl.ctx, "tokens per chunk; the second half of each is scored");
  sub->add_option("--chunks", f->ppl.chunks, "score at most this many chunks (default: all)");
  sub->add_option("--batch-tokens", f->ppl.batch_tokens,
                  "tokens per forward (whole chunks, at least one)");
  sub->add_option("--dtype", f->dtype, "fp32 | bf16 (GEMMs)");
  sub->add_option("--threads", f->threads, "CPU threads");
  reg.actions.emplace_back(sub, [f]() {
    PX_CHECK(!f->source.hf_dir.empty() || !f->source.checkpoint.empty(),
             "give --model HF_DIR | FILE.gguf or --checkpoint CKPT_DIR");
    select_gguf(f->source);
    run_perplexity_job(*f, std::cout, std::cerr);
    return 0;
  });
}

}  // namespace parallm::cli
