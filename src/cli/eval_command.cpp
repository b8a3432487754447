// `parallm eval --model HF_DIR --data FILES ...` prints {"loss": ...} as JSON;
// with the packed-document flags the loss is the one training computes.
#include <nlohmann/json.hpp>

#include <iostream>
#include <memory>

#include "cli/commands.h"
#include "train/eval_job.h"

namespace parallm::cli {

void add_eval_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    std::string model, lora_adapter;
    std::vector<std::string> data;
    int64_t seq_len = 128, micro_batch = 4, batches = 8;
    int threads = 0;
    PackedDocs docs;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("eval", "mean loss of a model on token shards");
  sub->add_option("--model", f->model, "Hugging Face model directory")->required();
  sub->add_option("--data", f->data, "token shards")->required();
  sub->add_option("--seq-len,--seq-length", f->seq_len, "tokens per sequence");
  sub->add_option("--micro-batch-size", f->micro_batch, "sequences per batch");
  sub->add_option("--batches", f->batches, "number of batches");
  sub->add_option("--threads", f->threads, "CPU threads");
  sub->add_option("--lora-adapter", f->lora_adapter,
                  "PEFT LoRA adapter directory applied to the model (docs/lora.md)");
  // Packed documents, as `parallm train` reads them (docs/context_parallel.md).
  sub->add_flag("--reset-attention-mask", f->docs.reset_attention_mask,
                "attend only within the token's document (documents end at --eod-token)");
  sub->add_flag("--reset-position-ids", f->docs.reset_position_ids,
                "positions restart at 0 after every --eod-token");
  sub->add_flag("--eod-mask-loss", f->docs.eod_mask_loss,
                "no loss where the input token is --eod-token");
  sub->add_option("--eod-token", f->docs.eod, "end-of-document token id");
  reg.actions.emplace_back(sub, [f]() {
    EvalResult r = evaluate_hf_model(f->model, f->data, f->seq_len, f->micro_batch, f->batches,
                                     f->threads, f->lora_adapter, f->docs);
    std::cout
        << nlohmann::json{{"loss", r.loss}, {"tokens", r.tokens}, {"batches", r.batches}}.dump()
        << std::endl;
    return 0;
  });
}

}  // namespace parallm::cli
