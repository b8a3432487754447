// GGUF v3 out (see gguf_writer.h).
#include "io/gguf/gguf_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "base/error.h"

namespace parallm {

namespace {
template <class T>
void put(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}
void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}
uint64_t aligned(uint64_t n) {
  return (n + GgufWriter::kAlignment - 1) / GgufWriter::kAlignment * GgufWriter::kAlignment;
}
}  // namespace

void GgufWriter::key(const std::string& k, GgufValueType t) {
  PX_CHECK(std::find(keys_.begin(), keys_.end(), k) == keys_.end(), "GGUF key '{}' twice", k);
  keys_.push_back(k);
  put_string(kv_, k);
  put<uint32_t>(kv_, static_cast<uint32_t>(t));
  ++kv_count_;
}

void GgufWriter::add_string(const std::string& k, const std::string& v) {
  key(k, GgufValueType::STRING);
  put_string(kv_, v);
}
void GgufWriter::add_u32(const std::string& k, uint32_t v) {
  key(k, GgufValueType::U32);
  put(kv_, v);
}
void GgufWriter::add_i32(const std::string& k, int32_t v) {
  key(k, GgufValueType::I32);
  put(kv_, v);
}
void GgufWriter::add_f32(const std::string& k, float v) {
  key(k, GgufValueType::F32);
  put(kv_, v);
}
void GgufWriter::add_bool(const std::string& k, bool v) {
  key(k, GgufValueType::BOOL);
  put<uint8_t>(kv_, v ? 1 : 0);
}
void GgufWriter::add_strings(const std::string& k, const std::vector<std::string>& v) {
  key(k, GgufValueType::ARRAY);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::STRING));
  put<uint64_t>(kv_, v.size());
  for (const std::string& s : v) put_string(kv_, s);
}
void GgufWriter::add_i32s(const std::string& k, const std::vector<int32_t>& v) {
  key(k, GgufValueType::ARRAY);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::I32));
  put<uint64_t>(kv_, v.size());
  for (int32_t x : v) put(kv_, x);
}
void GgufWriter::add_f32s(const std::string& k, const std::vector<float>& v) {
  key(k, GgufValueType::ARRAY);
  put<uint32_t>(kv_, static_cast<uint32_t>(GgufValueType::F32));
  put<uint64_t>(kv_, v.size());
  for (float x : v) put(kv_, x);
}

void GgufWriter::add_tensor(const std::string& name, const std::vector<int64_t>& shape,
                            int ggml_type, std::vector<uint8_t> bytes) {
  PX_CHECK(!shape.empty() && shape.size() <= 4, "GGUF tensor '{}': {} dims", name, shape.size());
  for (const Tensor& t : tensors_) PX_CHECK(t.name != name, "GGUF tensor '{}' twice", name);
  tensors_.push_back({name, shape, ggml_type, std::move(bytes)});
}

void GgufWriter::write(const std::string& path) const {
  std::vector<uint8_t> head;
  head.insert(head.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(head, 3);
  put<uint64_t>(head, tensors_.size());
  put<uint64_t>(head, kv_count_);
  head.insert(head.end(), kv_.begin(), kv_.end());
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    put_string(head, t.name);
    put<uint32_t>(head, static_cast<uint32_t>(t.shape.size()));
    for (auto d = t.shape.rbegin(); d != t.shape.rend(); ++d) put<uint64_t>(head, *d);
    put<uint32_t>(head, static_cast<uint32_t>(t.type));
    put<uint64_t>(head, offset);
    offset = aligned(offset + t.bytes.size());
  }
  head.resize(aligned(head.size()), 0);

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    PX_CHECK(f.good(), "cannot write '{}'", tmp);
    f.write(reinterpret_cast<const char*>(head.data()), static_cast<std::streamsize>(head.size()));
    const std::vector<char> pad(kAlignment, 0);
    for (const Tensor& t : tensors_) {
      f.write(reinterpret_cast<const char*>(t.bytes.data()),
              static_cast<std::streamsize>(t.bytes.size()));
      f.write(pad.data(), static_cast<std::streamsize>(aligned(t.bytes.size()) - t.bytes.size()));
    }
    f.flush();
    PX_CHECK(f.good(), "writing '{}' failed (disk full?)", tmp);
    f.close();
    std::filesystem::rename(tmp, path);
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove(tmp, ec);
    throw;
  }
}

}  // namespace parallm
