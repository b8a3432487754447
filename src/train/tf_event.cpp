#include "train/tf_event.h"

#include <array>
#include <cstring>

namespace parallm::tfevent {

namespace {

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected poly
    t[i] = c;
  }
  return t;
}
constexpr std::array<uint32_t, 256> kCrcTable = make_crc_table();

// Protobuf wire format: a key is (field << 3) | wire type.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kBytes = 2, kFixed32 = 5 };

void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7F) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_key(std::string& out, uint32_t field, Wire w) { put_varint(out, (field << 3) | w); }
template <typename T>
void put_le(std::string& out, T v) {  // x86 and every platform we build on are little-endian
  char b[sizeof(T)];
  std::memcpy(b, &v, sizeof(T));
  out.append(b, sizeof(T));
}
void put_bytes(std::string& out, uint32_t field, std::string_view s) {
  put_key(out, field, kBytes);
  put_varint(out, s.size());
  out.append(s);
}
void put_double(std::string& out, uint32_t field, double v) {
  put_key(out, field, kFixed64);
  put_le(out, v);
}
void put_int(std::string& out, uint32_t field, int64_t v) {
  put_key(out, field, kVarint);
  put_varint(out, static_cast<uint64_t>(v));
}

std::string event_head(double wall_time, int64_t step) {
  std::string e;
  put_double(e, 1, wall_time);
  if (step != 0) put_int(e, 2, step);  // proto3: zero is the absent default
  return e;
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = kCrcTable[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string file_version_event(double wall_time) {
  std::string e = event_head(wall_time, 0);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string scalars_event(double wall_time, int64_t step,
                          const std::vector<std::pair<std::string, float>>& scalars) {
  std::string summary;
  for (const auto& [tag, value] : scalars) {
    std::string v;
    put_bytes(v, 1, tag);
    put_key(v, 2, kFixed32);
    put_le(v, value);
    put_bytes(summary, 1, v);
  }
  std::string e = event_head(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

std::string session_start_event(double wall_time, int64_t step) {
  std::string log;
  put_int(log, 1, 1);  // SessionLog.status = START
  std::string e = event_head(wall_time, step);
  put_bytes(e, 7, log);
  return e;
}

std::string tf_record(std::string_view payload) {
  std::string r;
  std::string len;
  put_le(len, static_cast<uint64_t>(payload.size()));
  r += len;
  put_le(r, masked_crc32c(len));
  r.append(payload);
  put_le(r, masked_crc32c(payload));
  return r;
}

}  // namespace parallm::tfevent
