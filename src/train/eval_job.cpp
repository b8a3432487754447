#include "train/eval_job.h"

#include "data/data_loader.h"
#include "io/hf_model.h"
#include "io/peft_adapter.h"
#include "model/transformer.h"
#include "ops/host_runtime.h"

namespace parallm {

EvalResult evaluate_hf_model(const std::string& model_dir, const std::vector<std::string>& files,
                             int64_t T, int64_t B, int64_t batches, int threads,
                             const std::string& lora_adapter, const PackedDocs& docs) {
  ModelConfig cfg = read_hf_model_config(model_dir);
  if (!lora_adapter.empty()) cfg.lora = read_peft_config(lora_adapter, cfg);
  PX_CHECK(!files.empty(), "no evaluation data given (--data)");
  PX_CHECK(T > 0 && B > 0 && batches > 0,
           "seq-len ({}), micro-batch-size ({}) and batches ({}) must be positive", T, B, batches);
  PX_CHECK(!docs.any() || docs.eod >= 0,
           "--reset-attention-mask, --reset-position-ids and --eod-mask-loss need --eod-token "
           "(the end-of-document token id)");
  PX_CHECK(!docs.any() || docs.eod < cfg.vocab_size,
           "--eod-token {} is outside the model's vocabulary of {} tokens", docs.eod,
           cfg.vocab_size);
  PX_CHECK(!cfg.uses_learned_positions() || T <= cfg.max_positions,
           "seq-len ({}) exceeds the model's max_positions ({})", T, cfg.max_positions);
  DataLoader data(files, T, 0, false);
  data.validate_vocab(cfg.vocab_size);
  PX_CHECK(data.num_windows() >= B * batches,
           "{} batches of {} x {} tokens need {} windows but the data holds {} ({} tokens)",
           batches, B, T, B * batches, data.num_windows(), data.num_tokens());
  ops::set_host_threads(threads);

  Allocator alloc;
  Transformer model(cfg, alloc);
  load_hf_weights(model_dir, model);
  if (!lora_adapter.empty()) load_peft_adapter(lora_adapter, model);
  model.set_packed_docs(docs);
  std::vector<int32_t> in(B * T), tg(B * T);
  LossSum total;
  for (int64_t i = 0; i < batches; ++i) {
    data.fill_batch(i * B, B, in.data(), tg.data());
    LossSum l = model.forward_loss(in.data(), tg.data(), B, T);
    total.sum += l.sum;
    total.count += l.count;
  }
  return EvalResult{total.sum / static_cast<double>(total.count), total.count, batches};
}

}  // namespace parallm
