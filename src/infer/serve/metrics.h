// ServerMetrics: what `GET /metrics` shows, in the Prometheus text format
// (version 0.0.4): latency histograms the HTTP layer records (time to first
// token, inter-token latency, end-to-end latency), requests by endpoint and
// status, and the engine's counters and gauges (EngineCounters). Every
// metric is named parallm_*. Thread-safe: requests record from their own
// threads while /metrics renders.
#pragma once
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "infer/serve/engine.h"

namespace parallm::serve {

// A Prometheus histogram: cumulative counts per upper bound, plus +Inf.
class Histogram {
 public:
  explicit Histogram(std::vector<double> upper_bounds);
  void observe(double v);
  // "# HELP/# TYPE" lines and one line per bucket, _sum and _count.
  std::string render(const std::string& name, const std::string& help) const;
  int64_t count() const;

 private:
  mutable std::mutex mu_;
  std::vector<double> bounds_;
  std::vector<int64_t> counts_;  // per bucket, not cumulative; last: above every bound
  double sum_ = 0.0;
  int64_t count_ = 0;
};

class ServerMetrics {
 public:
  ServerMetrics();
  void record_request(const std::string& endpoint, int status);
  void record_ttft(double s) { ttft_.observe(s); }
  void record_inter_token(double s) { itl_.observe(s); }
  void record_latency(double s) { e2e_.observe(s); }
  void add_in_flight(int delta);
  // A completion request accepted for a served LoRA adapter (by its name).
  void record_lora_request(const std::string& adapter);

  std::string render(const EngineCounters& engine) const;

 private:
  mutable std::mutex mu_;
  std::map<std::pair<std::string, int>, int64_t> requests_;  // (endpoint, status) -> count
  int64_t in_flight_ = 0;
  std::map<std::string, int64_t> lora_requests_;  // adapter name -> requests
  Histogram ttft_, itl_, e2e_;
};

}  // namespace parallm::serve
