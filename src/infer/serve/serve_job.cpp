// run_serve_job (see serve_job.h).
#include "infer/serve/serve_job.h"

#include <fmt/core.h>

#include <csignal>
#include <ctime>

#include "base/error.h"
#include "infer/model_text.h"
#include "infer/serve/engine_factory.h"
#include "infer/serve/metrics.h"
#include "infer/serve/request_log.h"
#include "kernels/cpu/threads.h"

namespace parallm::serve {

int run_serve_job(const ServeJobOptions& opts, comm::Communicator* world, ShutdownSignals& signals,
                  std::ostream& out, std::ostream& err) {
  PX_CHECK(!world || world->size() == 1, "parallm serve runs on one process for now, got {} ranks",
           world ? world->size() : 1);
  const Precision precision = precision_from_name(opts.dtype);
  PX_CHECK(precision != Precision::FP16, "--dtype must be fp32 or bf16, got {}", opts.dtype);
  PX_CHECK(opts.max_running >= 1, "--max-running must be >= 1, got {}", opts.max_running);
  PX_CHECK(opts.max_waiting >= 1, "--max-waiting must be >= 1, got {}", opts.max_waiting);
  RequestLog log(opts.log_file);  // an unwritable log fails before the model loads

  const std::string dir = tokenizer_dir(opts.source, opts.tokenizer);
  const std::unique_ptr<Tokenizer> tok = load_tokenizer_or_bytes(dir);
  const ChatTemplate chat = load_chat_template(dir);
  cpu::set_num_threads(opts.threads);
  InferenceModel im(opts.source, TpGroup{}, precision, world);
  const ModelConfig& cfg = im.model().config();
  check_tokenizer_fits(*tok, dir, cfg.vocab_size);

  const std::string name = !opts.served_model_name.empty() ? opts.served_model_name
                           : !opts.source.hf_dir.empty()   ? opts.source.hf_dir
                                                           : opts.source.checkpoint;
  const ServedModel model{name,           cfg.max_positions,
                          cfg.vocab_size, tok.get(),
                          &chat,          static_cast<int64_t>(std::time(nullptr))};
  EngineSettings es;
  es.max_running = opts.max_running;
  es.max_waiting = opts.max_waiting;
  es.eos_ids = end_of_sequence_ids(im.eos_ids(), *tok, dir);
  es.decode = [&tok](std::span<const int32_t> ids) { return tok->decode_bytes(ids, true); };
  std::unique_ptr<Engine> engine = make_engine(opts.engine, im.model(), es);

  HttpOptions http = opts.http;
  if (http.threads == 0) http.threads = static_cast<int>(opts.max_running + opts.max_waiting + 16);
  ServerMetrics metrics;
  ApiServer server(*engine, model, http, metrics, log);
  const int port = server.bind();
  out << fmt::format(
             "parallm serve: listening on http://{}:{} (model '{}', engine {}, context {}, "
             "max-running {}, max-waiting {})",
             http.host, port, name, opts.engine, cfg.max_positions, opts.max_running,
             opts.max_waiting)
      << std::endl;
  const auto grace = std::chrono::milliseconds(static_cast<int64_t>(opts.shutdown_grace_s * 1000));
  signals.watch([&](int signo) {
    err << fmt::format("parallm serve: {} received, shutting down",
                       signo == SIGINT ? "SIGINT" : "SIGTERM")
        << std::endl;
    server.shutdown(grace);
  });
  server.serve();
  signals.stop();  // waits for a shutdown under way
  engine->shutdown(false);
  err << "parallm serve: stopped" << std::endl;
  return 0;
}

}  // namespace parallm::serve
