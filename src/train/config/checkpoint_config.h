// CheckpointConfig: the [checkpoint] table: where the weights come from
// (--init-from, a Hugging Face directory; --load / --resume, a distributed
// checkpoint in any layout) and where they go (--save DIR/step-NNNNNNN
// every save_interval steps, at an exit and at the end; --save-hf at the
// end). docs/checkpoints.md.
#pragma once
#include <cstdint>
#include <string>

namespace parallm {

struct CheckpointConfig {
  std::string init_from;      // HF directory; empty = random init from the seed
  std::string load_dir;       // --load: resume from its latest (an error when there is none)
  bool resume = false;        // --resume: resume from save_dir when it holds a checkpoint
  std::string save_dir;       // --save
  int64_t save_interval = 0;  // 0: only at the end (and at an exit)
  int keep = 0;               // newest checkpoints kept (0: all)
  int64_t exit_interval = 0;  // stop cleanly after a step divisible by this (0: never)
  std::string save_hf_dir;    // --save-hf: a Hugging Face directory at the end of training
                              // (under LoRA: the PEFT adapter, docs/lora.md)
  std::string lora_adapter;   // --lora-adapter: a PEFT adapter the LoRA adapters start from
  bool async_save = false;    // --async-save: write in the background (checkpoint_writer.h)
  // Frequent snapshots, always in the background, in a fast directory
  // (/dev/shm); the newest complete one of --save and --snapshot is resumed.
  std::string snapshot_dir;       // --snapshot
  int64_t snapshot_interval = 0;  // --snapshot-interval

  void validate() const;
};

}  // namespace parallm
