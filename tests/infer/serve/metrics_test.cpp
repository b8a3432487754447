// The Prometheus text of /metrics: cumulative histogram buckets with +Inf,
// _sum and _count; requests by endpoint and status; the engine's counters.
#include <gtest/gtest.h>

#include "infer/serve/metrics.h"

namespace parallm::serve {
namespace {

TEST(Histogram, CumulativeBuckets) {
  Histogram h({0.1, 1.0});
  h.observe(0.05);
  h.observe(0.1);  // on a bound: counted in it (le)
  h.observe(0.5);
  h.observe(7.0);
  EXPECT_EQ(h.render("x_seconds", "help"),
            "# HELP x_seconds help\n# TYPE x_seconds histogram\n"
            "x_seconds_bucket{le=\"0.1\"} 2\nx_seconds_bucket{le=\"1\"} 3\n"
            "x_seconds_bucket{le=\"+Inf\"} 4\nx_seconds_sum 7.65\nx_seconds_count 4\n");
}

TEST(ServerMetrics, RendersEverything) {
  ServerMetrics m;
  m.record_request("/v1/completions", 200);
  m.record_request("/v1/completions", 200);
  m.record_request("/v1/chat/completions", 400);
  m.record_ttft(0.02);
  m.record_inter_token(0.003);
  m.record_latency(0.5);
  m.add_in_flight(2);
  EngineCounters e;
  e.running = 3;
  e.waiting = 4;
  e.generated_tokens = 99;
  const std::string t = m.render(e);
  for (const char* line :
       {"parallm_http_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n",
        "parallm_http_requests_total{endpoint=\"/v1/chat/completions\",status=\"400\"} 1\n",
        "parallm_http_requests_in_flight 2\n", "parallm_num_requests_running 3\n",
        "parallm_num_requests_waiting 4\n", "parallm_generation_tokens_total 99\n",
        "# TYPE parallm_time_to_first_token_seconds histogram\n",
        "parallm_time_to_first_token_seconds_count 1\n",
        "parallm_inter_token_latency_seconds_bucket{le=\"0.005\"} 1\n",
        "parallm_e2e_request_latency_seconds_sum 0.5\n"})
    EXPECT_NE(t.find(line), std::string::npos) << line;
}

}  // namespace
}  // namespace parallm::serve
