// Safetensors writer: header construction, HF-compatible ordering, and
// streaming the data (with chunked f32 -> bf16/f16 conversion) into an
// atomically replaced file.
#include "io/safetensors_writer.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/safetensors_reader.h"
#include "tensor/half.h"

namespace parallm {
namespace {

// Position of each dtype in the reference implementation's Dtype enum, whose
// order (roughly by width) its writer sorts on, widest first.
int reference_rank(DType t) {
  switch (t) {
    case DType::BOOL:
      return 0;
    case DType::U8:
      return 1;
    case DType::I8:
      return 2;
    case DType::I16:
      return 5;
    case DType::U16:
      return 6;
    case DType::F16:
      return 7;
    case DType::BF16:
      return 8;
    case DType::I32:
      return 9;
    case DType::F32:
      return 11;
    case DType::F64:
      return 12;
    case DType::I64:
      return 13;
  }
  return 0;
}

uint64_t byte_count(const std::string& name, DType dtype, const std::vector<int64_t>& shape) {
  uint64_t n = dtype_size(dtype);
  for (int64_t d : shape) {
    PX_CHECK(d >= 0, "safetensors writer: tensor '{}' has negative dimension in shape ({})", name,
             fmt::join(shape, ", "));
    PX_CHECK(!__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n),
             "safetensors writer: tensor '{}' shape ({}) overflows 64-bit byte counts", name,
             fmt::join(shape, ", "));
  }
  return n;
}

void write_converted(std::ostream& out, const float* src, uint64_t count, DType stored) {
  constexpr uint64_t kChunk = 1 << 16;
  std::vector<uint16_t> buf(std::min(count, kChunk));
  for (uint64_t i = 0; i < count; i += kChunk) {
    const uint64_t n = std::min(kChunk, count - i);
    for (uint64_t k = 0; k < n; ++k)
      buf[k] = stored == DType::BF16 ? f32_to_bf16(src[i + k]) : f32_to_f16(src[i + k]);
    out.write(reinterpret_cast<const char*>(buf.data()), static_cast<std::streamsize>(n * 2));
  }
}

}  // namespace

void SafetensorsWriter::add_pending(Pending p) {
  PX_CHECK(p.name != "__metadata__",
           "safetensors writer: '__metadata__' is reserved and cannot name a tensor");
  PX_CHECK(!names_.count(p.name), "safetensors writer: tensor '{}' added twice", p.name);
  PX_CHECK(p.data != nullptr || p.nbytes == 0,
           "safetensors writer: tensor '{}' of {} bytes has null data", p.name, p.nbytes);
  names_.insert(p.name);
  tensors_.push_back(std::move(p));
}

void SafetensorsWriter::add(std::string name, DType dtype, std::vector<int64_t> shape,
                            const void* data) {
  const uint64_t nbytes = byte_count(name, dtype, shape);
  add_pending({std::move(name), dtype, std::move(shape), data, false, nbytes});
}

void SafetensorsWriter::add_copy(std::string name, DType dtype, std::vector<int64_t> shape,
                                 const void* data) {
  const uint64_t nbytes = byte_count(name, dtype, shape);
  PX_CHECK(data != nullptr || nbytes == 0, "safetensors writer: tensor '{}' has null data", name);
  PX_CHECK(!names_.count(name), "safetensors writer: tensor '{}' added twice", name);
  std::vector<std::byte> copy(nbytes);
  if (nbytes) std::memcpy(copy.data(), data, nbytes);
  copies_.push_back(std::move(copy));  // the heap buffer does not move with the vector
  add_pending({std::move(name), dtype, std::move(shape), copies_.back().data(), false, nbytes});
}

void SafetensorsWriter::add_f32_as(std::string name, DType stored, std::vector<int64_t> shape,
                                   const float* data) {
  PX_CHECK(stored == DType::F32 || stored == DType::BF16 || stored == DType::F16,
           "safetensors writer: tensor '{}' can be stored from f32 as F32, BF16 or F16, not {}",
           name, dtype_name(stored));
  const uint64_t nbytes = byte_count(name, stored, shape);
  add_pending({std::move(name), stored, std::move(shape), data, stored != DType::F32, nbytes});
}

void SafetensorsWriter::set_metadata(std::string key, std::string value) {
  metadata_[std::move(key)] = std::move(value);
}

std::vector<const SafetensorsWriter::Pending*> SafetensorsWriter::file_order() const {
  std::vector<const Pending*> order;
  for (const auto& t : tensors_) order.push_back(&t);
  std::sort(order.begin(), order.end(), [](const Pending* a, const Pending* b) {
    const int ra = reference_rank(a->dtype), rb = reference_rank(b->dtype);
    return ra != rb ? ra > rb : a->name < b->name;
  });
  return order;
}

std::string SafetensorsWriter::header() const {
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata_.empty()) h["__metadata__"] = metadata_;
  uint64_t offset = 0;
  for (const Pending* t : file_order()) {
    h[t->name] = {{"dtype", std::string(dtype_name(t->dtype))},
                  {"shape", t->shape},
                  {"data_offsets", {offset, offset + t->nbytes}}};
    offset += t->nbytes;
  }
  std::string text;
  try {
    text = h.dump();
  } catch (const nlohmann::json::exception& e) {
    PX_FAIL("safetensors writer: cannot encode header: {}", e.what());  // e.g. non-UTF-8 name
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // so the data buffer starts 8-aligned
  PX_CHECK(text.size() <= kSafetensorsMaxHeaderBytes,
           "safetensors writer: header of {} bytes exceeds the limit of {} bytes", text.size(),
           kSafetensorsMaxHeaderBytes);
  return text;
}

void SafetensorsWriter::write_to(std::ostream& out) const {
  const std::string h = header();
  const uint64_t n = h.size();  // little-endian host (asserted in the reader)
  out.write(reinterpret_cast<const char*>(&n), 8);
  out.write(h.data(), static_cast<std::streamsize>(h.size()));
  for (const Pending* t : file_order()) {
    if (t->from_f32) {
      write_converted(out, static_cast<const float*>(t->data), t->nbytes / 2, t->dtype);
    } else if (t->nbytes) {
      out.write(static_cast<const char*>(t->data), static_cast<std::streamsize>(t->nbytes));
    }
  }
}

void SafetensorsWriter::write(const std::string& path) const {
  (void)header();  // fail on a bad header before touching the disk
  write_file_atomically(path, [this](std::ostream& out) { write_to(out); });
}

}  // namespace parallm
