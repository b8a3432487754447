// `parallm memory`: bytes per rank by category for a model, layout and
// recipe, with a verdict against --device-memory and changes that fit.
#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "io/hf_config.h"
#include "model/model_catalog.h"
#include "plan/memory_report.h"
#include "train/config/inference_flags.h"

namespace parallm::cli {

void add_memory_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    std::string model = "gpt3-175b", precision = "bf16", optimizer = "adamw", recompute = "none",
                schedule = "1f1b", activations = "megatron", device;
    MemoryQuery q;
    bool json = false, inference = false;
    int64_t batch = 1, context = 0;
    KvDType kv_dtype = KvDType::BF16;
    std::string lora_targets = "q,v";
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "memory",
      "bytes per rank by category: parameters, gradients, optimizer states, activations, "
      "communication (the formulas: docs/memory.md)");
  sub->add_option("--model", f->model,
                  "preset (gpt3-175b, llama2-7b, llama3-8b, ...) or an HF config.json");
  sub->add_option("--seq-len,--seq-length", f->q.seq_len, "sequence length");
  sub->add_option("--micro-batch-size", f->q.micro_batch, "sequences per micro-batch");
  sub->add_option("--micro-batches", f->q.micro_batches, "micro-batches per step per dp rank");
  sub->add_option("--tp,--tensor-model-parallel-size", f->q.tp, "tensor parallel size");
  sub->add_option("--pp,--pipeline-model-parallel-size", f->q.pp, "pipeline parallel size");
  sub->add_option("--dp,--data-parallel-size", f->q.dp, "data parallel size");
  sub->add_option("--cp,--context-parallel-size", f->q.cp, "context parallel size");
  sub->add_option("--ep,--expert-model-parallel-size", f->q.ep, "expert parallel size");
  sub->add_option("--expert-tp,--expert-tensor-parallel-size", f->q.expert_tp,
                  "experts' tensor parallel size: 1 (whole on every tp rank) or --tp (each "
                  "expert split over the tp group like a dense MLP)");
  sub->add_option("--virtual-stages", f->q.virtual_stages, "model chunks per pipeline rank");
  sub->add_option("--schedule", f->schedule, "gpipe, 1f1b, interleaved, zb or dualpipev");
  sub->add_flag("--sequence-parallel", f->q.sequence_parallel, "Megatron sequence parallelism");
  sub->add_option("--zero", f->q.zero, "ZeRO stage 0-3");
  sub->add_option("--precision", f->precision, "fp32, bf16 or fp16");
  sub->add_option("--optimizer", f->optimizer,
                  "sgd, momentum, adam, adamw or muon (Muon: 4 bytes per block-matrix element, "
                  "AdamW 8 for the rest)");
  sub->add_option("--recompute", f->recompute, "none, selective or full");
  sub->add_option("--activations", f->activations,
                  "megatron (Korthikanti et al., Megatron-LM's 16-bit layers) or parallm (the "
                  "tensors this implementation's layers save on any device, held against its "
                  "allocator)");
  sub->add_option("--device-memory", f->device, "e.g. 80GiB: print a verdict and what would fit");
  sub->add_flag("--json", f->json, "machine-readable output");
  sub->add_flag("--inference", f->inference,
                "serving instead of training: weights (--precision) plus the KV cache, "
                "2 x layers x kv_heads x head_dim x bytes per token, per rank under --tp/--pp, "
                "and the largest batch x context that fits --device-memory");
  sub->add_option("--batch", f->batch, "inference: sequences held at once");
  sub->add_option("--context", f->context, "inference: tokens per sequence (default: the model's)");
  add_kv_dtype_flag(sub, f->kv_dtype);  // inference: the bytes per cached value
  sub->add_option("--lora-rank", f->q.lora.rank,
                  "LoRA rank r (0: full fine-tuning): the base is frozen (its bytes only), each "
                  "target linear gains r (in + out) trained parameters with their gradients and "
                  "optimizer states");
  sub->add_option("--lora-alpha", f->q.lora.alpha, "LoRA scale numerator (no effect on memory)");
  sub->add_option("--lora-targets", f->lora_targets,
                  "comma list of q, k, v, o, gate, up, down (or q_proj, ...), or all-linear");
  sub->add_flag("--qlora", f->q.lora.qlora,
                "NF4 base (QLoRA): block linears at 4 bits + an fp32 absmax per 64 weights (4.5 "
                "bits); BF16 adapters and gradients, 32-bit optimizer states, no master copy");
  sub->add_flag("--double-quant", f->q.lora.double_quant,
                "with --qlora: absmax quantised to 8 bits in blocks of 256 (4 + 8/64 + "
                "32/(64*256) = 4.127 bits per weight)");
  reg.actions.emplace_back(sub, [f]() {
    f->q.model = std::filesystem::path(f->model).extension() == ".json" ? read_hf_config(f->model)
                                                                        : catalog_model(f->model);
    double device = f->device.empty() ? 0.0 : parse_bytes(f->device);
    if (f->inference) {
      InferenceMemoryQuery iq{.model = f->q.model,
                              .tp = f->q.tp,
                              .pp = f->q.pp,
                              .weights = precision_from_name(f->precision),
                              .kv_cache = kv_precision(f->kv_dtype),
                              .batch = f->batch,
                              .context = f->context};
      if (f->json)
        std::cout << inference_memory_json(iq, f->model, device).dump(2) << "\n";
      else
        std::cout << inference_memory_text(iq, f->model, device);
      return 0;
    }
    f->q.precision = precision_from_name(f->precision);
    f->q.optimizer = optimizer_from_name(f->optimizer);
    f->q.recompute = recompute_from_name(f->recompute);
    f->q.schedule = pipeline::schedule_kind_from_name(f->schedule);
    f->q.activation_model = activation_model_from_name(f->activations);
    f->q.lora.targets = LoraTargets::parse(f->lora_targets);
    if (f->json) {
      std::cout << memory_report_json(f->q, f->model, device).dump(2) << "\n";
    } else {
      std::cout << memory_report_text(f->q, f->model, device);
    }
    return 0;
  });
}

}  // namespace parallm::cli
