// The `parallm serve` job: load a model (HF directory or checkpoint), its
// tokenizer and chat template (model_text.h, as `parallm generate` does),
// start the engine (--engine) and the OpenAI-compatible HTTP server, print
// one line with the address it listens on, and serve until SIGTERM or
// SIGINT; then shut down gracefully and return 0. Under mpirun the ranks
// form a tp x pp grid: rank 0 owns HTTP and the scheduler, the others run
// the steps it sends (StepRunner) and return when it stops.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "device/job_device.h"
#include "infer/inference_model.h"
#include "infer/serve/api_server.h"
#include "infer/serve/shutdown_signals.h"
#include "model/kv_cache/kv_dtype.h"
#include "train/config/lora_serving_flags.h"

namespace parallm::serve {

struct ServeJobOptions {
  ModelSource source;
  std::string tokenizer;          // directory with tokenizer.json; "": see model_text.h
  std::string served_model_name;  // "": the --model / --checkpoint path as given
  std::string dtype = "fp32";
  KvDType kv_dtype = KvDType::F32;  // the paged cache's storage (--kv-dtype)
  int threads = 0;  // CPU threads of the model (0: all)
  std::string engine = "continuous";
  int64_t max_running = 8;
  int64_t max_waiting = 64;
  int64_t max_batched_tokens = 512;  // continuous: tokens per step (decodes + prefill chunks)
  int64_t block_size = 16;           // continuous: tokens per KV block
  int64_t kv_cache_bytes = 0;        // continuous, per rank; 0: max_running full contexts
  bool prefix_cache = true;          // continuous: reuse cached full blocks
  int tp = 1, pp = 1;                // tp x pp = the job's ranks; rank 0 owns HTTP
  std::string device = "cpu";        // cpu, test or cuda (device/job_device.h)
  int pp_microbatches = 0;           // continuous, pp > 1: per step at most; 0: pp, >= 16 rows each
  HttpOptions http;                  // http.threads 0: max_running + max_waiting + 16
  std::string log_file;              // JSONL request log ("": none)
  // Served LoRA adapters (docs/serving.md, "Many LoRA adapters"): "name=path"
  // loaded at start (--lora-modules); --enable-lora allows loading at run
  // time without any; at most max_loras loaded, each of r <= max_lora_rank.
  LoraServingFlags lora;
  double shutdown_grace_s = 10.0;
  // Speculative decoding (continuous engine): prompt-lookup drafts, or a
  // draft model loaded whole on rank 0 (docs/serving.md).
  int64_t ngram_draft_tokens = 0;
  ModelSource draft;
  int64_t draft_model_tokens = 0;
};

// signals: created by the caller before any thread (shutdown_signals.h).
// device: as run_generate_job's (generate_job.h).
int run_serve_job(const ServeJobOptions& opts, comm::Communicator* world, ShutdownSignals& signals,
                  std::ostream& out, std::ostream& err, JobDevice* device = nullptr);

}  // namespace parallm::serve
