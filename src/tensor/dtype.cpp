#include "tensor/dtype.h"

#include "base/error.h"

#include <array>
#include <utility>

namespace parallm {
namespace {
struct Info {
  DType t;
  size_t size;
  std::string_view name;
};
constexpr std::array<Info, 11> kInfo = {{{DType::F32, 4, "F32"},
                                         {DType::F64, 8, "F64"},
                                         {DType::BF16, 2, "BF16"},
                                         {DType::F16, 2, "F16"},
                                         {DType::I64, 8, "I64"},
                                         {DType::I32, 4, "I32"},
                                         {DType::I16, 2, "I16"},
                                         {DType::I8, 1, "I8"},
                                         {DType::U16, 2, "U16"},
                                         {DType::U8, 1, "U8"},
                                         {DType::BOOL, 1, "BOOL"}}};
}  // namespace

size_t dtype_size(DType t) { return kInfo[static_cast<size_t>(t)].size; }
std::string_view dtype_name(DType t) { return kInfo[static_cast<size_t>(t)].name; }
std::optional<DType> dtype_from_name(std::string_view s) {
  for (const auto& i : kInfo)
    if (i.name == s) return i.t;
  return std::nullopt;
}

Device device_from_name(const std::string& s) {
  if (s == "cpu") return Device::CPU;
  if (s == "cuda") return Device::CUDA;
  if (s == "test") return Device::Test;
  PX_FAIL("unknown device '{}' (cpu, cuda, or test: the CPU test device, docs/devices.md)", s);
}

std::string_view device_name(Device d) {
  switch (d) {
    case Device::CPU:
      return "cpu";
    case Device::CUDA:
      return "cuda";
    case Device::Test:
      return "test";
  }
  return "?";
}

}  // namespace parallm
