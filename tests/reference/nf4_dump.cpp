// Writes parallm's NF4 quantisation of one f32 tensor for nf4_compare.py:
//   nf4_dump IN.f32 N DOUBLE_QUANT(0|1) OUTDIR
// OUTDIR gets packed.u8, and absmax.f32, or qabsmax.u8, absmax2.f32 and
// offset.f32; dequant.f32 (the weights as the NF4 GEMM sees them). With
// double quantisation and a fourth file OFFSET.f32 as argument 5, it also
// writes dequant_at_offset.f32: the weights rebuilt from bnb's offset, for
// holding the second stage to bnb exactly (the f32 mean is not, see there).
#include <fmt/core.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kernels/cpu/nf4.h"
#include "kernels/cpu/nf4_weight.h"
#include "tensor/allocator.h"

namespace {

template <class T>
std::vector<T> read(const std::string& path, size_t n) {
  std::vector<T> v(n);
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f || std::fread(v.data(), sizeof(T), n, f) != n) {
    fmt::print(stderr, "nf4_dump: cannot read {} values from {}\n", n, path);
    std::exit(2);
  }
  std::fclose(f);
  return v;
}

void write(const std::string& path, const void* p, size_t bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(p, 1, bytes, f) != bytes) {
    fmt::print(stderr, "nf4_dump: cannot write {}\n", path);
    std::exit(2);
  }
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  using namespace parallm;
  if (argc < 5) {
    fmt::print(stderr, "usage: nf4_dump IN.f32 N DOUBLE_QUANT(0|1) OUTDIR [OFFSET.f32]\n");
    return 2;
  }
  const int64_t n = std::stoll(argv[2]);
  const bool dq = std::string(argv[3]) == "1";
  const std::string out = argv[4];
  const std::vector<float> x = read<float>(argv[1], static_cast<size_t>(n));
  Allocator a;
  // One row of n: bnb flattens any shape, so the shape does not matter.
  cpu::Nf4Weight w(a, x.data(), 1, n, dq);
  write(out + "/packed.u8", w.packed().raw(), w.packed().nbytes());
  if (dq) {
    write(out + "/qabsmax.u8", w.qabsmax().raw(), w.qabsmax().nbytes());
    write(out + "/absmax2.f32", w.absmax2().raw(), w.absmax2().nbytes());
    const float offset = w.offset();
    write(out + "/offset.f32", &offset, sizeof offset);
  } else {
    write(out + "/absmax.f32", w.absmax().raw(), w.absmax().nbytes());
  }
  std::vector<float> y(static_cast<size_t>(n));
  w.dequantize(0, n, y.data());
  write(out + "/dequant.f32", y.data(), y.size() * sizeof(float));
  if (dq && argc > 5) {
    // bnb's first stage (its absmax, exact) with its offset: the second stage alone.
    const int64_t blocks = cpu::nf4_ceil_div(n, cpu::kNf4BlockSize);
    std::vector<float> absmax(static_cast<size_t>(blocks));
    std::vector<uint8_t> packed(static_cast<size_t>(cpu::nf4_ceil_div(n, 2)));
    cpu::nf4_quantize(x.data(), n, cpu::kNf4BlockSize, packed.data(), absmax.data());
    const float offset = read<float>(argv[5], 1)[0];
    std::vector<float> centred(absmax.size()),
        a2(static_cast<size_t>(cpu::nf4_ceil_div(blocks, 256)));
    for (size_t i = 0; i < absmax.size(); ++i) centred[i] = absmax[i] - offset;
    std::vector<uint8_t> q(absmax.size());
    cpu::blockwise8_quantize(centred.data(), blocks, cpu::kAbsmaxBlockSize, q.data(), a2.data());
    write(out + "/qabsmax_at_offset.u8", q.data(), q.size());
    write(out + "/absmax2_at_offset.f32", a2.data(), a2.size() * sizeof(float));
    std::vector<float> scale(absmax.size());
    cpu::double_dequantize_absmax(q.data(), a2.data(), offset, blocks, scale.data());
    cpu::nf4_dequantize(packed.data(), scale.data(), cpu::kNf4BlockSize, 0, n, y.data());
    write(out + "/dequant_at_offset.f32", y.data(), y.size() * sizeof(float));
  }
  return 0;
}
