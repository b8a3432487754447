// `parallm serve --model HF_DIR | --checkpoint CKPT --port 8000 ...`: an
// OpenAI-compatible HTTP server (chat and completions, streamed or not) over
// a batching engine; under mpirun the ranks form a --tp x --pp grid. Starts
// itself again with OMP_WAIT_POLICY=PASSIVE unless the wait policy was set.
#include <CLI/CLI.hpp>

#include <iostream>
#include <memory>

#include "base/env.h"
#include "base/error.h"
#include "base/reexec.h"
#include "cli/commands.h"
#include "comm/mpi/mpi_runtime.h"
#include "device/cuda/open_job_device.h"
#include "train/config/training_config.h"
#include "infer/serve/engine_factory.h"
#include "infer/serve/serve_job.h"
#include "plan/memory_model.h"
#include "train/config/inference_flags.h"
#include "train/config/lora_serving_flags.h"
#include "train/config/speculative_flags.h"

namespace parallm::cli {

void add_serve_command(CLI::App& app, CommandRegistry& reg) {
  auto job = std::make_shared<serve::ServeJobOptions>();
  serve::ServeJobOptions& j = *job;
  auto spec = std::make_shared<SpeculativeFlags>();
  CLI::App* sub = app.add_subcommand("serve", "serve a model over the OpenAI HTTP API");
  auto* model = sub->add_option("--model", j.source.hf_dir,
                               "Hugging Face model directory, or a llama.cpp .gguf file (docs/gguf.md)");
  sub->add_option("--checkpoint", j.source.checkpoint, "training checkpoint directory")
      ->excludes(model);
  sub->add_option("--tokenizer", j.tokenizer,
                  "directory with tokenizer.json (default: the --model directory's or .gguf file's, else bytes)");
  sub->add_option("--served-model-name", j.served_model_name,
                  "the model name clients give (default: the --model/--checkpoint path)");
  sub->add_option("--host", j.http.host, "address to listen on")->capture_default_str();
  sub->add_option("--port", j.http.port, "port to listen on (0: any free port, printed)")
      ->capture_default_str();
  sub->add_option("--engine", j.engine, "batching engine")
      ->check(CLI::IsMember(serve::kEngineKinds))
      ->capture_default_str();
  sub->add_option("--max-running", j.max_running, "sequences generated together")
      ->capture_default_str();
  sub->add_option("--max-waiting", j.max_waiting, "sequences queued before requests get 429")
      ->capture_default_str();
  sub->add_option("--max-batched-tokens", j.max_batched_tokens,
                  "continuous: tokens per engine step (decodes + prompt chunks)")
      ->capture_default_str();
  sub->add_option("--block-size", j.block_size, "continuous: tokens per KV cache block")
      ->capture_default_str();
  sub->add_option_function<std::string>(
      "--kv-cache-memory",
      [&j](const std::string& v) {
        j.kv_cache_bytes = static_cast<int64_t>(parse_bytes(v));
        PX_CHECK(j.kv_cache_bytes > 0, "--kv-cache-memory must be positive, got '{}'", v);
      },
      "continuous: KV cache per rank, e.g. 512MiB or 2GB (default: max-running full contexts)");
  sub->add_flag("!--no-prefix-cache", j.prefix_cache,
                "continuous: do not reuse cached prompt blocks");
  sub->add_option("--tp", j.tp, "tensor parallel size")->capture_default_str();
  sub->add_option("--pp", j.pp, "pipeline parallel size (tp x pp = number of ranks)")
      ->capture_default_str();
  sub->add_option("--device", j.device,
                  "cpu (default), cuda (this rank's GPU, docs/cuda.md) or test (the CPU test device, "
                  "whose memory host code cannot read: docs/devices.md)");
  sub->add_option("--pp-microbatches", j.pp_microbatches,
                  "continuous, --pp > 1: micro-batches of sequences a step is split into, "
                  "in flight through the stages (0: up to --pp, each of at least 16 tokens; "
                  "1: the step runs whole)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_option("--max-body-bytes", j.http.max_body_bytes, "larger request bodies get 413")
      ->capture_default_str();
  sub->add_option("--dtype", j.dtype, "fp32 | bf16 (GEMMs)")->capture_default_str();
  add_kv_dtype_flag(sub, j.kv_dtype);
  add_quantize_flag(sub, j.source.quantize);
  sub->add_option("--threads", j.threads, "CPU threads of the model (0: all)");
  sub->add_option("--log-file", j.log_file, "JSONL request log (ttft, latency, tokens)");
  add_lora_serving_flags(sub, j.lora);
  add_speculative_flags(sub, *spec);
  sub->add_option("--shutdown-grace", j.shutdown_grace_s,
                  "seconds responses under way may take to end after SIGTERM")
      ->capture_default_str();
  reg.actions.emplace_back(sub, [job, spec]() {
    PX_CHECK(!job->source.hf_dir.empty() || !job->source.checkpoint.empty(),
             "give --model HF_DIR | FILE.gguf or --checkpoint CKPT_DIR");
    select_gguf(job->source);
    const SpeculativeFlags::Resolved k = spec->resolve();
    job->ngram_draft_tokens = k.ngram;
    job->draft_model_tokens = k.draft_model;
    job->draft.hf_dir = spec->draft_model;
    job->draft.quantize = spec->draft_quantize;
    select_gguf(job->draft);
    // libgomp reads its wait policy once, when it is loaded: a server not
    // told otherwise starts again with passive waiting, since spinning
    // workers made decode 4-50x slower on a shared CPU (docs/serving.md).
    // OMP_WAIT_POLICY or GOMP_SPINCOUNT given: the user's choice stands.
    if (!read_launch_env().omp_wait_chosen) {
      const std::string why = reexec_with_env("OMP_WAIT_POLICY", "PASSIVE");  // returns on failure
      std::cerr << "parallm serve: could not restart with OMP_WAIT_POLICY=PASSIVE (" << why
                << "); idle OpenMP threads spin as libgomp's default has them" << std::endl;
    }
    // Before MPI or any other thread starts, so that every thread inherits
    // the blocked signals and only the server's watcher receives them.
    serve::ShutdownSignals signals;
    return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
      auto world = rt.world();
      const auto device = open_job_device(device_from_name(job->device), world.get(),
                                          read_launch_env().local_rank, false);
      return serve::run_serve_job(*job, world.get(), signals, std::cout, std::cerr, device.get());
    });
  });
}

}  // namespace parallm::cli
