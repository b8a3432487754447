// The event-file encoding against fixed bytes: the CRC-32C check value, and
// Events serialized by the protobuf library itself (tensorboard's event_pb2,
// printed once with SerializeToString().hex()).
#include "train/tf_event.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

#include "train/tensorboard_writer.h"

namespace parallm::tfevent {
namespace {

std::string hex(const std::string& s) {
  static const char* d = "0123456789abcdef";
  std::string h;
  for (unsigned char c : s) {
    h += d[c >> 4];
    h += d[c & 15];
  }
  return h;
}

TEST(TfEvent, Crc32cCheckValue) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the standard CRC-32C check
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(TfEvent, EventsMatchProtobufBytes) {
  // Event(wall_time=1.5, step=3, summary{value{tag "loss", simple_value 2}})
  EXPECT_EQ(hex(scalars_event(1.5, 3, {{"loss", 2.0f}})),
            "09000000000000f83f10032a0d0a0b0a046c6f73731500000040");
  // Event(wall_time=1.5, file_version "brain.Event:2")
  EXPECT_EQ(hex(file_version_event(1.5)), "09000000000000f83f1a0d627261696e2e4576656e743a32");
  // Event(wall_time=0, step=4, session_log{status START}); proto3 omits a zero
  // wall_time, we write it: both parse to the same message.
  EXPECT_EQ(hex(session_start_event(0.0, 4)),
            "0900000000000000001004"
            "3a020801");
}

TEST(TfEvent, RecordFraming) {
  const std::string payload = "abc";
  const std::string r = tf_record(payload);
  ASSERT_EQ(r.size(), 8u + 4u + 3u + 4u);
  uint64_t len = 0;
  std::memcpy(&len, r.data(), 8);
  EXPECT_EQ(len, 3u);
  uint32_t len_crc = 0, data_crc = 0;
  std::memcpy(&len_crc, r.data() + 8, 4);
  std::memcpy(&data_crc, r.data() + 15, 4);
  EXPECT_EQ(len_crc, masked_crc32c(r.substr(0, 8)));
  EXPECT_EQ(data_crc, masked_crc32c(payload));
  EXPECT_EQ(r.substr(12, 3), payload);
}

TEST(TfEvent, RecordScalarsFlattensEveryNumber) {
  const auto rec = nlohmann::json::parse(
      R"({"step": 7, "loss": 2.5, "skipped": false, "memory": {"activation": {"peak": 10}},
          "moe": {"expert_load": [1, 3]}, "pipeline": {"schedule": "1f1b"}})");
  const auto s = record_scalars(rec);
  std::map<std::string, float> m(s.begin(), s.end());
  EXPECT_EQ(m.size(), 5u);  // no "step", no string
  EXPECT_EQ(m["loss"], 2.5f);
  EXPECT_EQ(m["skipped"], 0.0f);
  EXPECT_EQ(m["memory/activation/peak"], 10.0f);
  EXPECT_EQ(m["moe/expert_load/1"], 3.0f);
}

}  // namespace
}  // namespace parallm::tfevent
