// A link priced per message size: each message takes its band's alpha and
// bandwidth; an all-reduce is the cheaper of ring and tree; bands round-trip through a profile file and bad ones are
// refused by name; the step-time model prices tp messages and dp buckets by
// their own sizes.
#include "plan/link_cost.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "model/model_catalog.h"
#include "plan/step_time.h"

namespace parallm {
namespace {

// Small messages: 5 us, 1 GB/s; up to 1 MiB: 20 us, 4 GB/s; above: 100 us, 10 GB/s.
LinkCost three_bands() {
  LinkCost l{.alpha_s = 1e-5, .bytes_per_s = 5e9};
  l.bands = {{.max_bytes = 64 << 10, .alpha_s = 5e-6, .bytes_per_s = 1e9},
             {.max_bytes = 1 << 20, .alpha_s = 2e-5, .bytes_per_s = 4e9},
             {.max_bytes = 8 << 20, .alpha_s = 1e-4, .bytes_per_s = 10e9}};
  return l;
}

TEST(LinkCost, EachMessageTakesItsSizeBand) {
  const LinkCost l = three_bands();
  EXPECT_DOUBLE_EQ(l.message_s(1000), 5e-6 + 1000 / 1e9);
  EXPECT_DOUBLE_EQ(l.message_s(64 << 10), 5e-6 + (64 << 10) / 1e9);  // the band's edge is in it
  EXPECT_DOUBLE_EQ(l.message_s(65537), 2e-5 + 65537 / 4e9);
  EXPECT_DOUBLE_EQ(l.message_s(1e9), 1e-4 + 1e9 / 10e9);  // beyond the last: the last band
  // A ring all-reduce of B over n: 2(n-1) messages of B / n.
  EXPECT_DOUBLE_EQ(l.ring_all_reduce_s(4 << 20, 4), 6 * l.message_s(1 << 20));
  EXPECT_EQ(l.ring_all_reduce_s(4 << 20, 1), 0.0);
  // The tree: 2 ceil(log2 n) latencies and twice the bytes. Over 64 devices
  // it wins for small messages (latency), the ring for large ones.
  EXPECT_DOUBLE_EQ(l.tree_all_reduce_s(1000, 64), 2 * (6 * 5e-6 + 1000 / 1e9));
  EXPECT_LT(l.tree_all_reduce_s(1000, 64), l.ring_all_reduce_s(1000, 64));
  EXPECT_DOUBLE_EQ(l.all_reduce_s(1000, 64), l.tree_all_reduce_s(1000, 64));
  // The tree streams the whole buffer (its band), the ring's messages are
  // bytes / n (theirs): here 64 MiB streams at 10 GB/s, 1 MiB pieces at 4.
  EXPECT_DOUBLE_EQ(l.all_reduce_s(64 << 20, 64), l.tree_all_reduce_s(64 << 20, 64));
  // Without bands: the one pair; a 1 GiB buffer goes round the ring (at
  // 64 MiB the ring's 126 latencies still cost more than the tree's bytes).
  LinkCost plain = l;
  plain.bands.clear();
  EXPECT_DOUBLE_EQ(plain.message_s(1e6), 1e-5 + 1e6 / 5e9);
  EXPECT_DOUBLE_EQ(plain.all_reduce_s(1 << 30, 64), plain.ring_all_reduce_s(1 << 30, 64));
  EXPECT_DOUBLE_EQ(plain.all_reduce_s(1000, 2), plain.ring_all_reduce_s(1000, 2));
}

TEST(LinkCost, BandsRoundTripAndBadOnesAreNamed) {
  const LinkCost l = three_bands();
  const LinkCost back = link_cost_from_json(link_cost_to_json(l), "intra_node", "p.json");
  ASSERT_EQ(back.bands.size(), 3u);
  EXPECT_DOUBLE_EQ(back.bands[1].max_bytes, 1 << 20);
  EXPECT_DOUBLE_EQ(back.message_s(300000), l.message_s(300000));
  EXPECT_EQ(link_cost_from_json({{"alpha_s", 0.0}, {"bytes_per_s", 1e9}}, "x", "p").bands.size(),
            0u);  // bands are optional

  auto refused = [](nlohmann::json j, const std::string& words) {
    try {
      link_cost_from_json(j, "intra_node", "p.json");
      ADD_FAILURE() << "accepted " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
    }
  };
  nlohmann::json j = link_cost_to_json(l);
  j["bands"][2]["max_bytes"] = 1000;  // not ascending
  refused(j, "intra_node.bands[2].max_bytes' (1000) must be positive and above");
  j = link_cost_to_json(l);
  j["bands"][0]["bytes_per_s"] = 0;
  refused(j, "'intra_node.bands[0]' needs alpha_s >= 0 and bytes_per_s > 0 (got 5e-06, 0)");
  refused({{"alpha_s", 1e-6}}, "'intra_node' must be {\"alpha_s\"");
}

// The step-time model sends each collective's messages through the band of
// their size: tp all-reduces of one micro-batch's activations, dp buckets.
TEST(LinkCost, StepTimePricesMessagesByTheirSize) {
  DeviceProfile d = builtin_profile("a100-80gb");
  d.intra_node = d.inter_node = three_bands();
  MemoryQuery q;
  q.model = catalog_model("llama-tiny");
  q.seq_len = 256;
  q.micro_batch = 2;
  q.micro_batches = 4;
  q.precision = Precision::FP32;
  q.tp = 2;
  const StepTime t = predict_step_time(q, d);
  const double act = 2.0 * 256 * q.model.hidden * 4;  // one micro-batch's activations
  const double layers = static_cast<double>(q.model.n_layers);
  EXPECT_NEAR(t.tp_comm_s, 4 * layers * 4 * d.intra_node.ring_all_reduce_s(act, 2),
              1e-12 + 1e-9 * t.tp_comm_s);
  // Changing only the band of a size no message has leaves the time alone.
  DeviceProfile other = d;
  other.intra_node.bands[0].bytes_per_s = other.inter_node.bands[0].bytes_per_s = 1e3;
  ASSERT_GT(act / 2, 64 << 10);
  EXPECT_DOUBLE_EQ(predict_step_time(q, other).tp_comm_s, t.tp_comm_s);
  // dp: fp32 gradients in --bucket-mb buckets; smaller buckets, more messages.
  q.tp = 1;
  q.dp = 2;
  q.bucket_mb = 25;
  const double big = predict_step_time(q, d).dp_comm_s;
  q.bucket_mb = 0.05;  // 51 KiB buckets: messages in the slow small band
  EXPECT_GT(predict_step_time(q, d).dp_comm_s, 2 * big);
}

}  // namespace
}  // namespace parallm
