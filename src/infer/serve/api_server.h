// ApiServer: the HTTP side of `parallm serve` (cpp-httplib): POST
// /v1/chat/completions and /v1/completions (JSON, or server-sent events
// when streamed), GET /v1/models, /health and /metrics. Every error is an
// OpenAI error object with its status (400 bad request, 404 unknown model or
// path, 413 body over the limit, 429 queue full, 503 shutting down); a 500
// only for a bug. A client that goes away mid-stream has its sequences
// cancelled; so has one that goes away while waiting for a non-streamed
// answer. One thread per open connection; the engine never waits on one.
#pragma once
#include <chrono>
#include <cstddef>
#include <memory>
#include <string>

#include "infer/serve/engine.h"
#include "infer/serve/lora_registry.h"
#include "infer/serve/metrics.h"
#include "infer/serve/request_log.h"
#include "infer/serve/served_model.h"

namespace parallm::serve {

struct HttpOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                      // 0: any free port (bind() says which)
  size_t max_body_bytes = 4u << 20;     // larger bodies get 413
  int threads = 64;                     // connections served at once
  std::chrono::milliseconds poll{100};  // how often a waiting stream checks its client
};

class ApiServer {
 public:
  // loras: the served LoRA adapters (lora_routes.h; null: off).
  ApiServer(Engine& engine, const ServedModel& model, HttpOptions opts, ServerMetrics& metrics,
            RequestLog& log, LoraRegistry* loras = nullptr);
  ~ApiServer();

  // Binds the listening socket; returns the port. Throws when it cannot.
  int bind();
  // Serves until shutdown() (from another thread) has finished.
  void serve();
  // Graceful: new requests get 503, the engine cancels every sequence (each
  // answer ends with finish_reason "length"), responses under way finish
  // (at most `grace`), then the server stops listening and serve() returns.
  void shutdown(std::chrono::milliseconds grace);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace parallm::serve
