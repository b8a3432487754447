// ServerMetrics and Histogram (see metrics.h).
#include "infer/serve/metrics.h"

#include <fmt/core.h>

#include <algorithm>

namespace parallm::serve {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  std::sort(bounds_.begin(), bounds_.end());
}

void Histogram::observe(double v) {
  const size_t b = static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) -
                                       bounds_.begin());  // first bound >= v
  std::lock_guard<std::mutex> lock(mu_);
  ++counts_[b];
  sum_ += v;
  ++count_;
}

int64_t Histogram::count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return count_;
}

std::string Histogram::render(const std::string& name, const std::string& help) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::string out = fmt::format("# HELP {} {}\n# TYPE {} histogram\n", name, help, name);
  int64_t cum = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    cum += counts_[i];
    out += fmt::format("{}_bucket{{le=\"{}\"}} {}\n", name, bounds_[i], cum);
  }
  out += fmt::format("{}_bucket{{le=\"+Inf\"}} {}\n", name, count_);
  out += fmt::format("{}_sum {}\n{}_count {}\n", name, sum_, name, count_);
  return out;
}

namespace {
// Seconds, from a millisecond to minutes (a CPU model's decode step is slow).
std::vector<double> latency_buckets() {
  return {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,  0.15, 0.2,  0.3,   0.4,
          0.5,   0.75,   1.0,   2.5,  5.0,   7.5,  10.0,  20.0, 40.0, 80.0, 160.0, 320.0};
}

std::string scalar(const char* type, const std::string& name, const std::string& help,
                   int64_t value) {
  return fmt::format("# HELP {} {}\n# TYPE {} {}\n{} {}\n", name, help, name, type, name, value);
}
}  // namespace

ServerMetrics::ServerMetrics()
    : ttft_(latency_buckets()), itl_(latency_buckets()), e2e_(latency_buckets()) {}

void ServerMetrics::record_request(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

void ServerMetrics::record_lora_request(const std::string& adapter) {
  std::lock_guard<std::mutex> lock(mu_);
  ++lora_requests_[adapter];
}

void ServerMetrics::add_in_flight(int delta) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_ += delta;
}

std::string ServerMetrics::render(const EngineCounters& e) const {
  std::string out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out +=
        "# HELP parallm_http_requests_total HTTP requests answered, by endpoint and status\n"
        "# TYPE parallm_http_requests_total counter\n";
    for (const auto& [key, n] : requests_)
      out += fmt::format("parallm_http_requests_total{{endpoint=\"{}\",status=\"{}\"}} {}\n",
                         key.first, key.second, n);
    out += scalar("gauge", "parallm_http_requests_in_flight",
                  "completion requests being answered now", in_flight_);
    out +=
        "# HELP parallm_lora_requests_total completion requests accepted, by LoRA adapter\n"
        "# TYPE parallm_lora_requests_total counter\n";
    for (const auto& [name, n] : lora_requests_)  // names are checked label-safe at load
      out += fmt::format("parallm_lora_requests_total{{lora_name=\"{}\"}} {}\n", name, n);
  }
  out +=
      scalar("gauge", "parallm_num_requests_running", "sequences in the engine's batch", e.running);
  out +=
      scalar("gauge", "parallm_num_requests_waiting", "sequences queued for the engine", e.waiting);
  out +=
      scalar("gauge", "parallm_kv_cache_blocks_used", "KV cache blocks in use", e.kv_blocks_used);
  out += scalar("gauge", "parallm_kv_cache_blocks_total", "KV cache blocks in the pool",
                e.kv_blocks_total);
  out +=
      scalar("counter", "parallm_prompt_tokens_total", "prompt tokens prefilled", e.prompt_tokens);
  out +=
      scalar("counter", "parallm_generation_tokens_total", "tokens generated", e.generated_tokens);
  out += scalar("counter", "parallm_prefix_cache_queries_total",
                "prompt tokens looked up in the prefix cache", e.prefix_cache_queries);
  out += scalar("counter", "parallm_prefix_cache_hits_total",
                "prompt tokens found in the prefix cache", e.prefix_cache_hits);
  out += scalar("counter", "parallm_preemptions_total", "sequences preempted", e.preemptions);
  out += scalar("counter", "parallm_structured_output_masked_steps_total",
                "tokens sampled under a structured-output grammar's mask", e.structured_steps);
  // vLLM's spec_decode_num_draft_tokens / _num_accepted_tokens, in this
  // file's naming (parallm_ prefix, counters end in _total).
  out += scalar("counter", "parallm_spec_decode_num_draft_tokens_total",
                "speculative decoding: draft tokens proposed and verified", e.spec_draft_tokens);
  out += scalar("counter", "parallm_spec_decode_num_accepted_tokens_total",
                "speculative decoding: draft tokens accepted", e.spec_accepted_tokens);
  out += fmt::format(
      "# HELP parallm_structured_output_mask_seconds_total time spent computing grammar masks\n"
      "# TYPE parallm_structured_output_mask_seconds_total counter\n"
      "parallm_structured_output_mask_seconds_total {}\n",
      static_cast<double>(e.structured_mask_us) * 1e-6);
  out += ttft_.render("parallm_time_to_first_token_seconds",
                      "time from a request's arrival to its first token");
  out += itl_.render("parallm_inter_token_latency_seconds", "time between a choice's tokens");
  out += e2e_.render("parallm_e2e_request_latency_seconds",
                     "time from a request's arrival to its last byte");
  return out;
}

}  // namespace parallm::serve
