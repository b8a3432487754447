// The `parallm serve` job: load a model (HF directory or checkpoint), its
// tokenizer and chat template (model_text.h, as `parallm generate` does),
// start the engine (--engine) and the OpenAI-compatible HTTP server, print
// one line with the address it listens on, and serve until SIGTERM or
// SIGINT; then shut down gracefully and return 0. One process for now: the
// world must be one rank (distributed serving: rank 0 will own HTTP).
#pragma once
#include <ostream>
#include <string>

#include "comm/communicator.h"
#include "infer/inference_model.h"
#include "infer/serve/api_server.h"
#include "infer/serve/shutdown_signals.h"

namespace parallm::serve {

struct ServeJobOptions {
  ModelSource source;
  std::string tokenizer;          // directory with tokenizer.json; "": see model_text.h
  std::string served_model_name;  // "": the --model / --checkpoint path as given
  std::string dtype = "fp32";
  int threads = 0;  // CPU threads of the model (0: all)
  std::string engine = "static";
  int64_t max_running = 8;
  int64_t max_waiting = 64;
  HttpOptions http;      // http.threads 0: max_running + max_waiting + 16
  std::string log_file;  // JSONL request log ("": none)
  double shutdown_grace_s = 10.0;
};

// signals: created by the caller before any thread (shutdown_signals.h).
int run_serve_job(const ServeJobOptions& opts, comm::Communicator* world, ShutdownSignals& signals,
                  std::ostream& out, std::ostream& err);

}  // namespace parallm::serve
