// GGUF's block quantisation formats for inference weights (llama.cpp's
// ggml types, byte for byte as a .gguf file stores them): Q8_0 and Q4_0
// (32 values a block, one fp16 scale) and the K-quants Q4_K and Q6_K (256
// values a super-block, 6- or 8-bit sub-block scales) that Q4_K_M mixes.
// Invariant: dequantize_blocks gives the bits of the `gguf` package's
// reference (gguf.quants, numpy) for every block; quantize_blocks gives its
// bits for Q8_0 and Q4_0, and for the K-quants a valid encoding of our own
// (gguf.quants has no K-quant quantiser; llama.cpp's files are read as is).
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace parallm::cpu {

enum class QuantType : uint8_t { Q8_0, Q4_0, Q4_K, Q6_K };

struct QuantTraits {
  const char* name;     // as llama.cpp names it: "q8_0"
  int ggml_type;        // the GGUF tensor type id
  int64_t block_elems;  // values a block holds
  int64_t block_bytes;  // bytes a block takes
};

const QuantTraits& quant_traits(QuantType t);
// The type of a GGUF tensor type id, when it is one of these.
std::optional<QuantType> quant_type_from_ggml(int ggml_type);
// "q8_0" | "q4_0" | "q4_k" | "q6_k" (case-insensitive); throws naming the accepted ones.
QuantType quant_type_from_name(const std::string& name);

// Bytes of a row of `cols` values (cols a multiple of the block size).
int64_t quant_row_bytes(QuantType t, int64_t cols);
// Bits a value takes, scales included (8.5 for Q8_0, 4.5 for Q4_0 and Q4_K, 6.5625 for Q6_K).
double quant_bits_per_value(QuantType t);

// n values (a multiple of the block size) to n / block_elems blocks.
void quantize_blocks(QuantType t, const float* x, int64_t n, uint8_t* out);
// n values of the blocks at `in` to f32.
void dequantize_blocks(QuantType t, const uint8_t* in, int64_t n, float* out);

// Q4_K's 12 bytes of 6-bit scales and mins of its 8 sub-blocks, to and from bytes.
void q4k_unpack_scales(const uint8_t* packed12, uint8_t* sc, uint8_t* m);
void q4k_pack_scales(const uint8_t* sc, const uint8_t* m, uint8_t* packed12);

}  // namespace parallm::cpu
