// ApiServer (see api_server.h): routes, errors, streaming and shutdown.
#include "infer/serve/api_server.h"

#include <fmt/core.h>
// cpp-httplib listens with a backlog of 5 by default: a burst of clients
// connecting at once (32 in the load test) then sees connections reset.
#define CPPHTTPLIB_LISTEN_BACKLOG 1024
#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <ctime>
#include <iostream>
#include <mutex>
#include <optional>
#include <random>
#include <thread>
#include <utility>

#include "base/error.h"
#include "infer/serve/api_error.h"
#include "infer/serve/api_request.h"
#include "infer/serve/completion_call.h"
#include "infer/serve/lora_routes.h"
#include "infer/serve/peer_socket.h"

namespace parallm::serve {

namespace {
constexpr const char* kJson = "application/json";

// A failure that is no fault of the request: said on stderr, answered 500.
ApiError internal_error(const std::exception& e) {
  std::cerr << "parallm serve: internal error: " << e.what() << std::endl;
  return ApiError(500, std::string("internal server error: ") + e.what(), "", "server_error");
}

double seconds_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// A label for /metrics: known paths as they are, anything else "other".
std::string endpoint_label(const std::string& path) {
  for (const char* p :
       {"/v1/chat/completions", "/v1/completions", "/v1/models", "/health", "/metrics",
        "/v1/load_lora_adapter", "/v1/unload_lora_adapter"})
    if (path == p) return path;
  return "other";
}
}  // namespace

struct ApiServer::Impl {
  Impl(Engine& e, const ServedModel& m, HttpOptions o, ServerMetrics& me, RequestLog& l,
       LoraRegistry* lr)
      : engine(e),
        model(m),
        opts(std::move(o)),
        metrics(me),
        log(l),
        loras(lr),
        rng(std::random_device{}()) {}

  Engine& engine;
  const ServedModel& model;
  HttpOptions opts;
  ServerMetrics& metrics;
  RequestLog& log;
  LoraRegistry* loras;
  httplib::Server http;
  std::atomic<bool> draining{false};
  std::atomic<bool> served{false};  // serve() has returned
  std::mutex mu;                    // guards rng, in_flight
  std::condition_variable idle;
  std::mt19937_64 rng;
  int64_t in_flight = 0;

  void routes();
  void completion(Endpoint endpoint, const std::string& body, const httplib::Request& req,
                  httplib::Response& res);
  // Reads the body up to the limit (httplib enforces it only when the
  // length is declared, not for chunked uploads); false: answered 413/400.
  bool read_body(const httplib::ContentReader& reader, std::string& body, httplib::Response& res);
  void begin_call() {
    std::lock_guard<std::mutex> lock(mu);
    ++in_flight;
    metrics.add_in_flight(1);
  }
  void end_call() {
    {
      std::lock_guard<std::mutex> lock(mu);
      --in_flight;
      metrics.add_in_flight(-1);
    }
    idle.notify_all();
  }
  uint64_t random64() {
    std::lock_guard<std::mutex> lock(mu);
    return rng();
  }
  std::string new_id(Endpoint e) {
    return fmt::format("{}-{:016x}{:08x}", e == Endpoint::Chat ? "chatcmpl" : "cmpl", random64(),
                       static_cast<uint32_t>(random64()));
  }
  void log_call(const CompletionCall& call, const std::string& id, int status,
                Clock::time_point arrival, const std::string& error);
  void log_refusal(Endpoint e, const ApiError& err, Clock::time_point arrival);
};

void ApiServer::Impl::log_call(const CompletionCall& call, const std::string& id, int status,
                               Clock::time_point arrival, const std::string& error) {
  const double latency = seconds_between(arrival, Clock::now());
  const CallTimings& t = call.timings();
  if (status == 200) {
    metrics.record_latency(latency);
    if (t.ttft_s >= 0) metrics.record_ttft(t.ttft_s);
    for (double g : t.itl) metrics.record_inter_token(g);
  }
  if (!log.enabled()) return;
  double itl_mean = 0.0;
  for (double g : t.itl) itl_mean += g;
  if (!t.itl.empty()) itl_mean /= static_cast<double>(t.itl.size());
  const Usage u = call.usage();
  nlohmann::json j{{"time", static_cast<int64_t>(std::time(nullptr))},
                   {"id", id},
                   {"endpoint", call.request().endpoint == Endpoint::Chat ? "chat" : "completions"},
                   {"status", status},
                   {"stream", call.request().stream},
                   {"n", call.request().n},
                   {"prompt_tokens", u.prompt_tokens},
                   {"completion_tokens", u.completion_tokens},
                   {"ttft_s", t.ttft_s >= 0 ? nlohmann::json(t.ttft_s) : nlohmann::json()},
                   {"itl_mean_s", t.itl.empty() ? nlohmann::json() : nlohmann::json(itl_mean)},
                   {"latency_s", latency},
                   {"finish_reasons", call.finish_reasons()}};
  if (!error.empty()) j["error"] = error;
  log.write(j);
}

void ApiServer::Impl::log_refusal(Endpoint e, const ApiError& err, Clock::time_point arrival) {
  if (!log.enabled()) return;
  log.write({{"time", static_cast<int64_t>(std::time(nullptr))},
             {"endpoint", e == Endpoint::Chat ? "chat" : "completions"},
             {"status", err.status},
             {"latency_s", seconds_between(arrival, Clock::now())},
             {"error", err.what()}});
}

bool ApiServer::Impl::read_body(const httplib::ContentReader& reader, std::string& body,
                                httplib::Response& res) {
  bool too_big = false;
  const bool ok = reader([&](const char* data, size_t n) {
    if (body.size() + n > opts.max_body_bytes) {
      too_big = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  if (ok) return true;
  too_big = too_big || res.status == 413;
  res.status = too_big ? 413 : 400;
  const std::string msg = too_big
                              ? fmt::format("the request body is larger than the limit of {} bytes",
                                            opts.max_body_bytes)
                              : std::string("the request body could not be read");
  res.set_content(dump_body(error_body(msg, error_type_for_status(res.status), "", "")), kJson);
  res.set_header("Connection", "close");  // the rest of the body is still on the wire
  return false;
}

void ApiServer::Impl::completion(Endpoint endpoint, const std::string& body,
                                 const httplib::Request& req, httplib::Response& res) {
  const Clock::time_point arrival = Clock::now();
  begin_call();
  std::shared_ptr<CompletionCall> call;
  std::string id;
  try {
    if (draining) throw ApiError(503, "the server is shutting down", "", "server_error");
    ApiRequest r = parse_request(endpoint, body);
    const std::string adapter = resolve_model(r, loras, model);  // "": the base model
    if (!r.seed_given) r.sampling.seed = random64();  // OpenAI: unseeded requests differ
    id = new_id(endpoint);
    call = std::make_shared<CompletionCall>(std::move(r), model, engine, id, arrival);
    if (!adapter.empty()) metrics.record_lora_request(adapter);
  } catch (const std::exception& e) {
    // ApiError: a refusal; anything else is a bug, answered 500 all the same
    // so the call is counted out (shutdown waits for every call).
    const auto* api = dynamic_cast<const ApiError*>(&e);
    const ApiError err = api ? *api : internal_error(e);
    res.status = err.status;
    res.set_content(dump_body(error_body(err)), kJson);
    log_refusal(endpoint, err, arrival);
    end_call();
    return;
  }
  if (!call->request().stream) {
    try {
      // Nothing is written until the body is done, so a client that went
      // away is seen on its socket, not by a failed write.
      const PeerSocket peer(req.remote_addr, req.remote_port, req.local_port);
      const std::optional<nlohmann::json> body =
          call->wait_body(opts.poll, [&peer] { return peer.gone(); });
      if (body) {
        res.set_content(dump_body(*body), kJson);
        log_call(*call, id, 200, arrival, "");
      } else {
        res.status = 499;  // nobody reads it; for the access log and /metrics
        res.set_header("Connection", "close");
        log_call(*call, id, 499, arrival, "the client went away");
      }
    } catch (const std::exception& e) {
      const ApiError err = internal_error(e);
      res.status = err.status;
      res.set_content(dump_body(error_body(err)), kJson);
      log_call(*call, id, err.status, arrival, err.what());
    }
    end_call();
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  res.set_header("X-Accel-Buffering", "no");
  const std::chrono::milliseconds poll = opts.poll;
  res.set_chunked_content_provider(
      "text/event-stream",
      [call, poll](size_t, httplib::DataSink& sink) {
        try {
          const std::string ev = call->next_events(poll);
          // A write that fails means the client is gone: ending here
          // releases the response as failed, which cancels the call.
          if (!ev.empty() && !sink.write(ev.data(), ev.size())) return false;
          if (call->done()) sink.done();
          return true;
        } catch (const std::exception& e) {
          std::cerr << "parallm serve: internal error while streaming: " << e.what() << std::endl;
          return false;
        }
      },
      [this, call, id, arrival](bool success) {
        if (!success) call->cancel();
        log_call(*call, id, success ? 200 : 499, arrival,
                 success ? "" : "the client went away or the stream failed");
        end_call();
      });
}

void ApiServer::Impl::routes() {
  for (const auto& [path, endpoint] : {std::pair{"/v1/chat/completions", Endpoint::Chat},
                                       std::pair{"/v1/completions", Endpoint::Completion}})
    http.Post(path, [this, e = endpoint](const httplib::Request& q, httplib::Response& s,
                                         const httplib::ContentReader& reader) {
      std::string body;
      if (read_body(reader, body, s)) completion(e, body, q, s);
    });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& s) {
    const nlohmann::json m{{"id", model.name},
                           {"object", "model"},
                           {"created", model.created},
                           {"owned_by", "parallm"},
                           {"max_model_len", model.context}};
    nlohmann::json data = nlohmann::json::array({m});
    for (nlohmann::json& card : lora_model_cards(loras, model)) data.push_back(std::move(card));
    s.set_content(dump_body({{"object", "list"}, {"data", data}}), kJson);
  });
  for (const bool load : {true, false})
    http.Post(load ? "/v1/load_lora_adapter" : "/v1/unload_lora_adapter",
              [this, load](const httplib::Request&, httplib::Response& s,
                           const httplib::ContentReader& reader) {
                std::string body;
                if (!read_body(reader, body, s)) return;
                try {
                  s.set_content(load ? load_lora_adapter(loras, body)
                                     : unload_lora_adapter(loras, body),
                                "text/plain");
                } catch (const ApiError& err) {
                  s.status = err.status;
                  s.set_content(dump_body(error_body(err)), kJson);
                }
              });
  http.Get("/health", [this](const httplib::Request&, httplib::Response& s) {
    s.status = draining ? 503 : 200;
    s.set_content(dump_body({{"status", draining ? "shutting down" : "ok"}}), kJson);
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& s) {
    s.set_content(metrics.render(engine.counters()), "text/plain; version=0.0.4");
  });
  // Errors httplib finds itself (no route, body too large, bad HTTP) get
  // the OpenAI shape too; responses that already have a body keep it.
  http.set_error_handler(
      httplib::Server::HandlerWithResponse([this](const httplib::Request& q, httplib::Response& s) {
        if (!s.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        std::string msg;
        if (s.status == 404)
          msg = fmt::format("not found: {} {}", q.method, q.path);
        else if (s.status == 413)
          msg = fmt::format("the request body is larger than the limit of {} bytes",
                            opts.max_body_bytes);
        else
          msg = fmt::format("the request could not be handled (HTTP {})", s.status);
        s.set_content(dump_body(error_body(msg, error_type_for_status(s.status), "", "")), kJson);
        return httplib::Server::HandlerResponse::Handled;
      }));
  http.set_exception_handler(
      [](const httplib::Request&, httplib::Response& s, std::exception_ptr ep) {
        std::string what = "unknown";
        try {
          std::rethrow_exception(ep);
        } catch (const std::exception& e) {
          what = e.what();
        } catch (...) {
        }
        std::cerr << "parallm serve: internal error: " << what << std::endl;
        s.status = 500;
        s.set_content(
            dump_body(error_body("internal server error: " + what, "server_error", "", "")), kJson);
      });
  http.set_logger([this](const httplib::Request& q, const httplib::Response& s) {
    metrics.record_request(endpoint_label(q.path), s.status);
  });
}

ApiServer::ApiServer(Engine& engine, const ServedModel& model, HttpOptions opts,
                     ServerMetrics& metrics, RequestLog& log, LoraRegistry* loras)
    : impl_(std::make_unique<Impl>(engine, model, std::move(opts), metrics, log, loras)) {
  Impl& s = *impl_;
  PX_CHECK(s.opts.threads >= 1, "the HTTP server needs at least 1 thread, got {}", s.opts.threads);
  const size_t threads = static_cast<size_t>(s.opts.threads);
  s.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  s.http.set_payload_max_length(s.opts.max_body_bytes);
  s.routes();
}

ApiServer::~ApiServer() = default;

int ApiServer::bind() {
  Impl& s = *impl_;
  int port = s.opts.port;
  if (port == 0) {
    port = s.http.bind_to_any_port(s.opts.host);
    PX_CHECK(port > 0, "cannot bind a free port on {}", s.opts.host);
  } else {
    PX_CHECK(s.http.bind_to_port(s.opts.host, port), "cannot listen on {}:{} (in use?)",
             s.opts.host, port);
  }
  return port;
}

void ApiServer::serve() {
  impl_->http.listen_after_bind();
  impl_->served = true;
}

void ApiServer::shutdown(std::chrono::milliseconds grace) {
  Impl& s = *impl_;
  s.draining = true;
  // httplib's stop() does nothing before the listen loop runs: a signal
  // that comes right after bind() waits for it (or for serve() to end).
  const Clock::time_point t0 = Clock::now();
  while (!s.http.is_running() && !s.served && Clock::now() - t0 < std::chrono::seconds(10))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  s.engine.shutdown(/*drain=*/false);
  {
    std::unique_lock<std::mutex> lock(s.mu);
    s.idle.wait_for(lock, grace, [&] { return s.in_flight == 0; });
  }
  s.http.stop();
}

}  // namespace parallm::serve
