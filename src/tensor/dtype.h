// Element types and their sizes and names (names follow safetensors: F32, BF16...).
// bf16/f16 are storage types; arithmetic happens in f32 after conversion.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace parallm {

enum class DType : uint8_t { F32, F64, BF16, F16, I64, I32, I16, I8, U16, U8, BOOL };

size_t dtype_size(DType t);
std::string_view dtype_name(DType t);                      // "F32", "BF16", ...
std::optional<DType> dtype_from_name(std::string_view s);  // inverse of dtype_name

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<float>() {
  return DType::F32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::F64;
}
template <>
constexpr DType dtype_of<int64_t>() {
  return DType::I64;
}
template <>
constexpr DType dtype_of<int32_t>() {
  return DType::I32;
}
template <>
constexpr DType dtype_of<uint16_t>() {
  return DType::U16;
}
template <>
constexpr DType dtype_of<uint8_t>() {
  return DType::U8;
}
template <>
constexpr DType dtype_of<int8_t>() {
  return DType::I8;
}

// Test: a CPU-hosted device whose memory host code cannot read
// (tensor/test_device_memory.h), so the CPU suite proves that nothing above
// the op interface touches device memory before a GPU runs the code.
enum class Device : uint8_t { CPU, CUDA, Test };
std::string_view device_name(Device d);  // "cpu", "cuda", "test"
Device device_from_name(const std::string& s);  // the inverse; throws on unknown names

}  // namespace parallm
