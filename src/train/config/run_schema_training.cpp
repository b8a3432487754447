// [data], [training], [optimizer] and [lr_schedule]: what the run learns
// from and how it steps. Flag names follow Megatron where one exists.
#include "train/config/run_schema.h"

namespace parallm {
namespace {

std::string warmup_style_name(WarmupStyle s) {
  return s == WarmupStyle::LlmC ? "llmc" : s == WarmupStyle::Linear ? "linear" : "log";
}
std::string decay_style_name(DecayStyle s) {
  return s == DecayStyle::Cosine ? "cosine" : s == DecayStyle::Linear ? "linear" : "constant";
}

void declare_data(std::vector<Setting>& v) {
  v.push_back(field_setting("data", "train", "--data",
                            "training data: llm.c token shards and/or Megatron dataset prefixes "
                            "(PREFIX.bin + PREFIX.idx), or a blend in Megatron's syntax: 0.7 "
                            "PREFIX_A 0.3 PREFIX_B",
                            PX_FIELD(train.data.train))
                  .path(PathRule::DataList));
  v.push_back(field_setting("data", "val", "--val-data",
                            "validation data: llm.c token shards and/or Megatron dataset prefixes",
                            PX_FIELD(train.data.val))
                  .path(PathRule::DataList));
  v.push_back(field_setting("data", "shuffle", "", "shuffle the global sample order",
                            PX_FIELD(train.data.shuffle)));
  // Packed documents (docs/context_parallel.md, "Packed documents").
  v.push_back(field_setting("data", "reset_attention_mask", "--reset-attention-mask",
                            "attend only within the token's document (documents end at "
                            "--eod-token)",
                            PX_FIELD(train.data.docs.reset_attention_mask))
                  .as_switch(true));
  v.push_back(field_setting("data", "reset_position_ids", "--reset-position-ids",
                            "positions restart at 0 after every --eod-token",
                            PX_FIELD(train.data.docs.reset_position_ids))
                  .as_switch(true));
  v.push_back(field_setting("data", "eod_mask_loss", "--eod-mask-loss",
                            "no loss where the input token is --eod-token",
                            PX_FIELD(train.data.docs.eod_mask_loss))
                  .as_switch(true));
  v.push_back(field_setting("data", "eod_token", "--eod-token",
                            "end-of-document token id (default 256, the byte tokenizer's "
                            "end-of-text)",
                            PX_FIELD(train.data.docs.eod)));
}

void declare_training(std::vector<Setting>& v) {
  v.push_back(field_setting("training", "steps", "--steps,--train-iters", "optimizer steps",
                            PX_FIELD(train.training.steps)));
  v.push_back(field_setting("training", "micro_batch_size", "--micro-batch-size",
                            "sequences per micro-batch", PX_FIELD(train.training.micro_batch_size)));
  v.push_back(field_setting("training", "global_batch_size", "--global-batch-size",
                            "sequences per optimizer step (gradient accumulation when larger than "
                            "the micro-batch)",
                            PX_FIELD(train.training.global_batch_size)));
  v.push_back(field_setting("training", "seq_len", "--seq-len,--seq-length", "tokens per sequence",
                            PX_FIELD(train.training.seq_len)));
  v.push_back(field_setting("training", "seed", "--seed", "seed for initialisation and data order",
                            PX_FIELD(train.training.seed)));
  v.push_back(field_setting("training", "clip_grad", "--clip-grad",
                            "global gradient-norm clip (0: off)", PX_FIELD(train.training.clip_grad)));
  v.push_back(named_setting("training", "recompute", "--recompute",
                            "activation recomputation: none, selective or full",
                            PX_FIELD(train.training.recompute), recompute_from_name,
                            recompute_name));
  // Where the run is, not what it is: a resume may move it (not recorded).
  v.push_back(named_setting("training", "device", "--device",
                            "cpu (default), cuda (each rank's GPU, NCCL between them: "
                            "docs/cuda.md) or test (the CPU test device, whose memory host code "
                            "cannot read: docs/devices.md)",
                            PX_FIELD(train.training.device), device_from_name, nullptr));
  // `parallm verify`'s own flags (docs/verify.md): no key, hidden, not recorded.
  v.push_back(field_setting("training", "", "--dump-ops",
                            "verify: each rank records its layer outputs and gradients in DIR",
                            PX_FIELD(train.training.dump_ops_dir))
                  .unrecorded()
                  .hide());
  v.push_back(named_setting("training", "", "--inject-fault",
                            "verify's tests only: plant a bug (tp-reduce-scale, "
                            "pp-drop-microbatch, zero3-shard-offset)",
                            PX_FIELD(train.training.inject_fault), injected_fault_from_name,
                            nullptr)
                  .hide());
}

void declare_optimizer(std::vector<Setting>& v) {
  v.push_back(named_setting("optimizer", "name", "--optimizer",
                            "sgd, momentum, adam, adamw (default) or muon (docs/optimizers.md)",
                            PX_FIELD(train.optimizer.kind), optimizer_from_name, optimizer_name));
  v.push_back(field_setting("optimizer", "lr", "--lr", "peak learning rate",
                            PX_FIELD(train.optimizer.lr)));
  v.push_back(field_setting("optimizer", "beta1", "--adam-beta1", "Adam's first-moment decay (0.9)",
                            PX_FIELD(train.optimizer.beta1)));
  v.push_back(field_setting("optimizer", "beta2", "--adam-beta2",
                            "Adam's second-moment decay (0.95)", PX_FIELD(train.optimizer.beta2)));
  v.push_back(field_setting("optimizer", "eps", "--adam-eps", "Adam's epsilon (1e-8)",
                            PX_FIELD(train.optimizer.eps)));
  v.push_back(field_setting("optimizer", "weight_decay", "--weight-decay",
                            "weight decay: decoupled (adamw, muon's AdamW part) or L2 (sgd, "
                            "momentum, adam)",
                            PX_FIELD(train.optimizer.weight_decay)));
  v.push_back(field_setting("optimizer", "momentum", "--momentum",
                            "SGD momentum (optimizer momentum; default 0.9)",
                            PX_FIELD(train.optimizer.momentum)));
  v.push_back(field_setting("optimizer", "nesterov", "--nesterov",
                            "Nesterov momentum (optimizer momentum)", PX_FIELD(train.optimizer.nesterov))
                  .as_switch(true));
  v.push_back(field_setting("optimizer", "muon_momentum", "--muon-momentum",
                            "Muon Nesterov momentum (0.95)", PX_FIELD(train.optimizer.muon_momentum)));
  v.push_back(field_setting("optimizer", "muon_ns_steps", "--muon-ns-steps",
                            "Muon Newton-Schulz steps (5)", PX_FIELD(train.optimizer.muon_ns_steps)));
  v.push_back(field_setting("optimizer", "muon_lr", "--muon-lr",
                            "Muon peak lr for the block matrices (0.02); the others take --lr with "
                            "AdamW",
                            PX_FIELD(train.optimizer.muon_lr)));
  v.push_back(field_setting("optimizer", "muon_weight_decay", "--muon-weight-decay",
                            "Muon decoupled weight decay (0)",
                            PX_FIELD(train.optimizer.muon_weight_decay)));
}

void declare_lr_schedule(std::vector<Setting>& v) {
  v.push_back(field_setting("lr_schedule", "warmup", "--warmup", "linear warmup steps",
                            PX_FIELD(train.lr_schedule.warmup)));
  v.push_back(field_setting("lr_schedule", "min_lr_ratio", "--min-lr-ratio",
                            "final lr as a fraction of --lr", PX_FIELD(train.lr_schedule.min_lr_ratio)));
  v.push_back(named_setting("lr_schedule", "warmup_style", "",
                            "llmc (default, as llm.c warms up), linear or log",
                            PX_FIELD(train.lr_schedule.warmup_style), warmup_style_from_name,
                            warmup_style_name));
  v.push_back(named_setting("lr_schedule", "decay_style", "--lr-decay-style",
                            "after warmup: cosine (default), linear or constant",
                            PX_FIELD(train.lr_schedule.decay_style), decay_style_from_name,
                            decay_style_name));
  v.push_back(field_setting("lr_schedule", "warmup_start_ratio", "",
                            "linear/log warmup's first lr as a fraction of the peak",
                            PX_FIELD(train.lr_schedule.warmup_start_ratio)));
  v.push_back(field_setting("lr_schedule", "decay_steps", "--lr-decay-iters",
                            "step where the decay ends (0: --steps)",
                            PX_FIELD(train.lr_schedule.decay_steps)));
}

}  // namespace

void declare_training_settings(RunSchema& s) {
  for (const char* t : {"data", "training", "optimizer", "lr_schedule"}) s.tables.push_back({t, {}});
  declare_data(s.settings);
  declare_training(s.settings);
  declare_optimizer(s.settings);
  declare_lr_schedule(s.settings);
}

}  // namespace parallm
