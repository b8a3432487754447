// Writes parallm's FP8 casts of an f32 file for fp8_compare.py:
//   fp8_dump IN.f32 OUTDIR
// OUTDIR gets e4m3.u8 and e5m2.u8 (ml_dtypes' rule: overflow to NaN /
// infinity), e4m3_sat.u8 and e5m2_sat.u8 (saturating), and e4m3.f32 and
// e5m2.f32: all 256 codes of each format decoded.
#include <fmt/core.h>

#include <cstdio>
#include <string>
#include <vector>

#include "tensor/fp8.h"

namespace {

template <class T>
void write(const std::string& path, const std::vector<T>& v) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(v.data(), sizeof(T), v.size(), f) != v.size()) {
    fmt::print(stderr, "fp8_dump: cannot write {}\n", path);
    std::exit(2);
  }
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace parallm;
  if (argc != 3) {
    fmt::print(stderr, "usage: fp8_dump IN.f32 OUTDIR\n");
    return 2;
  }
  FILE* f = std::fopen(argv[1], "rb");
  if (!f) {
    fmt::print(stderr, "fp8_dump: cannot open {}\n", argv[1]);
    return 2;
  }
  std::vector<float> in;
  float buf[4096];
  for (size_t got; (got = std::fread(buf, 4, 4096, f)) > 0;) in.insert(in.end(), buf, buf + got);
  std::fclose(f);
  const std::string out = argv[2];
  for (auto [fmt8, name] : {std::pair{Fp8Format::E4M3, "e4m3"}, std::pair{Fp8Format::E5M2, "e5m2"}}) {
    std::vector<uint8_t> codes(in.size());
    f32_to_fp8(in.data(), codes.data(), in.size(), fmt8, Overflow::NonFinite);
    write(out + "/" + name + ".u8", codes);
    f32_to_fp8(in.data(), codes.data(), in.size(), fmt8, Overflow::Saturate);
    write(out + "/" + name + "_sat.u8", codes);
    std::vector<uint8_t> all(256);
    for (int c = 0; c < 256; ++c) all[c] = static_cast<uint8_t>(c);
    std::vector<float> decoded(256);
    fp8_to_f32(all.data(), decoded.data(), 256, fmt8);
    write(out + "/" + name + ".f32", decoded);
  }
  return 0;
}
