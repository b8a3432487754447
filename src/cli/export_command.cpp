// `parallm export --checkpoint DIR --out HF_DIR`: a consolidated Hugging Face
// directory from a distributed checkpoint saved under any layout.
// `parallm export --merge-lora --base HF_DIR --lora-adapter PEFT_DIR --out HF_DIR`:
// the base with the adapter folded in (W + scale B A, docs/lora.md).
// `parallm export --model HF_DIR | --checkpoint DIR --gguf OUT.gguf [--quantize T]`:
// a GGUF v3 file llama.cpp reads (docs/gguf.md).
#include <fmt/core.h>

#include <memory>

#include "cli/commands.h"
#include "infer/export_gguf.h"
#include "io/peft_adapter.h"
#include "checkpoint/checkpoint_export.h"

namespace parallm::cli {

void add_export_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    std::string checkpoint, out, dtype = "F32", base, lora_adapter;
    std::string model, gguf, quantize, tokenizer;
    double max_shard_mb = 0;
    bool merge_lora = false;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("export", "write a Hugging Face directory from a checkpoint");
  sub->add_option("--checkpoint", f->checkpoint,
                  "checkpoint directory (its latest) or one step-NNNNNNN directory");
  sub->add_flag("--merge-lora", f->merge_lora,
                "fold a PEFT LoRA adapter (--lora-adapter) into its base (--base)");
  sub->add_option("--base", f->base, "base Hugging Face directory (with --merge-lora)");
  sub->add_option("--lora-adapter", f->lora_adapter, "PEFT adapter directory (with --merge-lora)");
  sub->add_option("--out", f->out, "output Hugging Face directory");
  sub->add_option("--model", f->model, "Hugging Face model directory (with --gguf)");
  sub->add_option("--gguf", f->gguf, "write a GGUF v3 file instead (docs/gguf.md)");
  sub->add_option("--quantize", f->quantize, "with --gguf: q8_0 | q4_0 | q4_k_m (default f32)");
  sub->add_option("--tokenizer", f->tokenizer,
                  "with --gguf: directory with tokenizer.json (default: the model's)");
  sub->add_option("--dtype", f->dtype, "F32 or BF16");
  sub->add_option("--max-shard-mb", f->max_shard_mb,
                  "split the weights into files of at most this many MiB (0: one file)");
  reg.actions.emplace_back(sub, [f]() {
    if (!f->gguf.empty()) {
      PX_CHECK(f->out.empty() && !f->merge_lora, "--gguf writes one file: no --out, --merge-lora");
      PX_CHECK(f->model.empty() != f->checkpoint.empty(),
               "--gguf takes --model HF_DIR or --checkpoint DIR");
      const GgufExportReport r = export_model_gguf(
          {.hf_dir = f->model, .checkpoint = f->checkpoint}, f->tokenizer, f->quantize, f->gguf);
      fmt::print("wrote {}: {} tensors ({} quantised {}), {} tensor bytes\n", f->gguf, r.tensors,
                 r.quantized, f->quantize.empty() ? "-" : f->quantize, r.bytes);
      return 0;
    }
    PX_CHECK(!f->out.empty(), "export needs --out HF_DIR (or --gguf FILE)");
    auto dtype = dtype_from_name(f->dtype);
    PX_CHECK(dtype == DType::F32 || dtype == DType::BF16, "--dtype must be F32 or BF16, got '{}'",
             f->dtype);
    PX_CHECK(f->max_shard_mb >= 0, "--max-shard-mb must be >= 0, got {}", f->max_shard_mb);
    if (f->merge_lora && f->checkpoint.empty()) {
      PX_CHECK(!f->base.empty() && !f->lora_adapter.empty(),
               "--merge-lora takes --checkpoint DIR, or --base HF_DIR and --lora-adapter PEFT_DIR");
      const int n = export_merged_lora(f->base, f->lora_adapter, f->out, *dtype);
      fmt::print("merged {} LoRA adapters of {} into {} and wrote {}\n", n, f->lora_adapter,
                 f->base, f->out);
      return 0;
    }
    PX_CHECK(!f->checkpoint.empty(), "export needs --checkpoint (or --merge-lora)");
    ExportResult r =
        export_checkpoint_to_hf(f->checkpoint, f->out, *dtype,
                                static_cast<int64_t>(f->max_shard_mb * (1 << 20)), f->merge_lora);
    fmt::print("exported {} (step {}, {}) to {}\n", r.checkpoint, r.step, arch_name(r.model.arch),
               f->out);
    return 0;
  });
}

}  // namespace parallm::cli
