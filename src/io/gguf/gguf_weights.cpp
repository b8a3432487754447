// GGUF tensors -> parameters (see gguf_weights.h). Two passes: plan (names,
// shapes, types, block alignment of every slice this rank holds), then copy.
#include "io/gguf/gguf_weights.h"

#include <cstring>
#include <map>
#include <set>

#include "base/error.h"
#include "io/hf_layout.h"
#include "nn/op_buffers.h"
#include "ops/quant.h"
#include "tensor/half.h"

namespace parallm {

namespace {

// (HF suffix inside a block, GGUF suffix) per family; a block's prefix is
// "transformer.h.N." / "model.layers.N." in HF and "blk.N." in GGUF.
const std::vector<std::pair<std::string, std::string>>& block_names(Arch a) {
  static const std::vector<std::pair<std::string, std::string>> kGpt2 = {
      {"ln_1.", "attn_norm."},         {"attn.c_attn.", "attn_qkv."},
      {"attn.c_proj.", "attn_output."}, {"ln_2.", "ffn_norm."},
      {"mlp.c_fc.", "ffn_up."},        {"mlp.c_proj.", "ffn_down."}};
  static const std::vector<std::pair<std::string, std::string>> kLlama = {
      {"input_layernorm.", "attn_norm."},
      {"self_attn.q_proj.", "attn_q."},
      {"self_attn.k_proj.", "attn_k."},
      {"self_attn.v_proj.", "attn_v."},
      {"self_attn.o_proj.", "attn_output."},
      {"post_attention_layernorm.", "ffn_norm."},
      {"mlp.gate_proj.", "ffn_gate."},
      {"mlp.up_proj.", "ffn_up."},
      {"mlp.down_proj.", "ffn_down."}};
  return a == Arch::GPT2 ? kGpt2 : kLlama;
}

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// Internal parameters that linear_forward multiplies by (out, in): these
// may stay quantised. Embeddings and norms never are.
bool is_linear_weight(const std::string& internal) {
  static const char* kSuffixes[] = {"attn.q.weight",  "attn.k.weight",   "attn.v.weight",
                                    "attn.o.weight",  "mlp.fc.weight",   "mlp.proj.weight",
                                    "mlp.gate.weight", "mlp.up.weight",  "mlp.down.weight"};
  if (internal == "lm_head.weight") return true;
  for (const char* s : kSuffixes) {
    const std::string suf(s);
    if (internal.size() >= suf.size() &&
        internal.compare(internal.size() - suf.size(), suf.size(), suf) == 0)
      return true;
  }
  return false;
}

// One expected GGUF tensor: the HF layout entry under its GGUF name, shape
// (rows, cols) untransposed; heads > 0: rows un-permuted per head of
// rows / heads (llama's attn_q / attn_k).
struct GgufSlot {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<std::string> parts;
  int64_t heads = 0;
};

std::vector<GgufSlot> gguf_layout(const ModelConfig& cfg) {
  std::vector<GgufSlot> out;
  for (const HfTensor& t : hf_layout(cfg)) {
    GgufSlot s{gguf_tensor_name(cfg, t.name), t.shape, t.parts, 0};
    PX_CHECK(!s.name.empty() && t.expert < 0, "no GGUF name for HF tensor '{}'", t.name);
    if (t.transpose) std::swap(s.shape[0], s.shape[1]);
    // llama.cpp's LlamaModel permutes q and k (weights and biases); Qwen2's converter does not.
    if (cfg.arch == Arch::LLaMA && cfg.hf_type != "qwen2") {
      if (starts_with(s.name, "blk.") && s.name.find(".attn_q.") != std::string::npos)
        s.heads = cfg.n_heads;
      if (starts_with(s.name, "blk.") && s.name.find(".attn_k.") != std::string::npos)
        s.heads = cfg.n_kv_heads;
    }
    out.push_back(std::move(s));
  }
  return out;
}

// The GGUF row holding HF row g of a permuted tensor: llama.cpp's permute
// reshapes each head's rows to (2, D/2) and swaps the axes, so HF row
// (h, i, j) = h*D + i*D/2 + j sits at GGUF row h*D + 2j + i.
int64_t gguf_row(const GgufSlot& s, int64_t g) {
  if (s.heads == 0) return g;
  const int64_t D = s.shape[0] / s.heads, half = D / 2;
  const int64_t h = g / D, r = g % D;
  return h * D + 2 * (r % half) + r / half;
}

enum class Storage { F32, F16, BF16, Quant };

struct Source {
  const GgufTensorInfo* info;
  Storage storage;
  ops::QuantType qtype{};
};

Source classify(const GgufFile& f, const GgufTensorInfo& t) {
  if (t.type == kGgmlF32) return {&t, Storage::F32};
  if (t.type == kGgmlF16) return {&t, Storage::F16};
  if (t.type == kGgmlBF16) return {&t, Storage::BF16};
  if (const auto q = ops::quant_type_from_ggml(t.type)) return {&t, Storage::Quant, *q};
  PX_FAIL("{}: tensor '{}' has type {} (ggml type {}), which parallm does not read (supported: "
          "F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q6_K)",
          f.path(), t.name, ggml_type_name(t.type), t.type);
}

// n values of tensor src from element `begin` (row-major), as f32.
void read_range(const GgufFile& f, const Source& src, int64_t begin, int64_t n, float* dst,
                std::vector<float>& scratch) {
  const std::byte* p = f.bytes(*src.info).data();
  if (src.storage == Storage::F32) {
    std::memcpy(dst, p + begin * 4, static_cast<size_t>(n) * 4);
    return;
  }
  if (src.storage != Storage::Quant) {
    for (int64_t k = 0; k < n; ++k) {
      uint16_t h;
      std::memcpy(&h, p + (begin + k) * 2, 2);
      dst[k] = src.storage == Storage::BF16 ? bf16_to_f32(h) : f16_to_f32(h);
    }
    return;
  }
  const ops::QuantTraits& q = ops::quant_traits(src.qtype);
  const int64_t b0 = begin / q.block_elems, b1 = (begin + n + q.block_elems - 1) / q.block_elems;
  scratch.resize(static_cast<size_t>((b1 - b0) * q.block_elems));
  ops::dequantize_blocks(src.qtype, reinterpret_cast<const uint8_t*>(p) + b0 * q.block_bytes,
                         (b1 - b0) * q.block_elems, scratch.data());
  std::memcpy(dst, scratch.data() + (begin - b0 * q.block_elems), static_cast<size_t>(n) * 4);
}

// One part of a slot that this rank holds: parameter i, its local (rows,
// cols) at global (row0 + off0, off1) of the slot's tensor.
struct Piece {
  int param;
  int64_t rows, cols, row0, off0, off1;
  bool quant;  // kept as a QuantWeight
  bool keep;   // and as f32 values too: a tied token table (the embedding gathers its rows)
};

struct Plan {
  const GgufSlot* slot;
  Source src;
  std::vector<Piece> pieces;
};

Plan plan_slot(const GgufFile& f, const GgufSlot& s, const GgufTensorInfo& t,
               const ParameterSet& ps, bool tied) {
  PX_CHECK(t.shape() == s.shape, "{}: tensor '{}' has shape [{}] (ne [{}]), the metadata implies "
           "[{}]", f.path(), t.name, fmt::join(t.shape(), ", "), fmt::join(t.ne, ", "),
           fmt::join(s.shape, ", "));
  Plan p{&s, classify(f, t), {}};
  int64_t row0 = 0;
  for (const std::string& name : s.parts) {
    const int i = ps.find(name);
    if (i < 0) continue;  // another pipeline stage's (a whole model holds every part)
    const ParamSpec& sp = ps.spec(i);
    Piece pc{i, sp.shape[0], sp.shape.size() > 1 ? sp.shape[1] : 1, row0,
             sp.shard_dim == 0 ? sp.shard_begin : 0, sp.shard_dim == 1 ? sp.shard_begin : 0,
             false, false};
    // A tied table held in blocks serves the head from those blocks (as
    // llama.cpp does: decode reads it every token) and the embedding from
    // its dequantised rows.
    pc.keep = tied && name == "embed.weight";
    pc.quant = p.src.storage == Storage::Quant && sp.shape.size() == 2 &&
               (is_linear_weight(name) || pc.keep);
    if (pc.quant) {
      const int64_t be = ops::quant_traits(p.src.qtype).block_elems;
      PX_CHECK(pc.off1 % be == 0 && pc.cols % be == 0,
               "{}: tensor '{}' ({}) is held in blocks of {} values, but this rank's slice of "
               "'{}' takes columns [{}, {}): use a tp size that splits its {} columns into whole "
               "blocks",
               f.path(), t.name, ggml_type_name(t.type), be, name, pc.off1, pc.off1 + pc.cols,
               s.shape[1]);
      PX_CHECK(ps.frozen(), "parameter '{}': a quantised GGUF weight needs a frozen model", name);
    }
    p.pieces.push_back(pc);
    row0 += sp.global_shape[0];
  }
  return p;
}

void load_piece(const GgufFile& f, const Plan& p, const Piece& pc, ParameterSet& ps,
                Allocator& alloc, std::vector<float>& scratch) {
  const GgufSlot& s = *p.slot;
  const int64_t rows_total = s.shape[0], cols_total = s.shape.size() > 1 ? s.shape[1] : 1;
  if (pc.quant) {
    const ops::QuantType qt = p.src.qtype;
    const int64_t full = ops::quant_row_bytes(qt, cols_total);
    const int64_t at = ops::quant_row_bytes(qt, pc.off1), len = ops::quant_row_bytes(qt, pc.cols);
    // Rows past the tensor (a tp shard's vocabulary padding) stay zero
    // bytes: every block type decodes zero bytes to zeros.
    std::vector<uint8_t> blocks(static_cast<size_t>(pc.rows * len), 0);
    const auto* base = reinterpret_cast<const uint8_t*>(f.bytes(*p.src.info).data());
    for (int64_t r = 0; r < pc.rows; ++r) {
      const int64_t g = pc.row0 + pc.off0 + r;
      if (g < rows_total)
        std::memcpy(blocks.data() + r * len, base + gguf_row(s, g) * full + at,
                    static_cast<size_t>(len));
    }
    ps.set_quant(pc.param,
                 std::make_shared<const ops::QuantWeight>(alloc, qt, pc.rows, pc.cols,
                                                          blocks.data()),
                 pc.keep);
    if (!pc.keep) return;
  }
  const HostView<float> view(ps.stream(), ps.value({pc.param}), pc.rows * pc.cols);
  for (int64_t r = 0; r < pc.rows; ++r) {
    const int64_t g = pc.row0 + pc.off0 + r;
    if (g < rows_total)
      read_range(f, p.src, gguf_row(s, g) * cols_total + pc.off1, pc.cols,
                 view.get() + r * pc.cols, scratch);
  }
  view.write_back();
}

}  // namespace

std::string gguf_tensor_name(const ModelConfig& cfg, const std::string& hf) {
  const bool gpt2 = cfg.arch == Arch::GPT2;
  const std::string root = gpt2 ? "transformer." : "model.";
  static const std::map<std::string, std::string> kGpt2Top = {
      {"transformer.wte.weight", "token_embd.weight"},
      {"transformer.wpe.weight", "position_embd.weight"},
      {"transformer.ln_f.weight", "output_norm.weight"},
      {"transformer.ln_f.bias", "output_norm.bias"}};
  static const std::map<std::string, std::string> kLlamaTop = {
      {"model.embed_tokens.weight", "token_embd.weight"},
      {"model.norm.weight", "output_norm.weight"},
      {"lm_head.weight", "output.weight"}};
  const auto& top = gpt2 ? kGpt2Top : kLlamaTop;
  if (auto it = top.find(hf); it != top.end()) return it->second;
  const std::string blocks = gpt2 ? "transformer.h." : "model.layers.";
  if (!starts_with(hf, blocks)) return "";
  const size_t dot = hf.find('.', blocks.size());
  if (dot == std::string::npos) return "";
  const std::string layer = hf.substr(blocks.size(), dot - blocks.size());
  const std::string rest = hf.substr(dot + 1);
  for (const auto& [h, g] : block_names(cfg.arch))
    if (starts_with(rest, h)) return "blk." + layer + "." + g + rest.substr(h.size());
  return "";
}

void load_gguf_weights(const GgufFile& f, Transformer& model) {
  const ModelConfig& cfg = model.config();
  ParameterSet& ps = model.base_params();
  const std::vector<GgufSlot> layout = gguf_layout(cfg);
  std::map<std::string, const GgufSlot*> expected;
  for (const GgufSlot& s : layout) expected[s.name] = &s;

  // Plan everything first: a bad tensor anywhere fails before any copy.
  std::vector<Plan> plans;
  for (const GgufTensorInfo& t : f.tensors()) {
    auto it = expected.find(t.name);
    if (it == expected.end()) {
      // GPT-2's head is the token table; a file may still carry a copy.
      if (cfg.arch == Arch::GPT2 && t.name == "output.weight") {
        const GgufTensorInfo* e = f.find_tensor("token_embd.weight");
        PX_CHECK(e != nullptr && e->type == t.type && e->ne == t.ne &&
                     std::memcmp(f.bytes(*e).data(), f.bytes(t).data(), t.nbytes) == 0,
                 "{}: tensor 'output.weight' differs from token_embd.weight: a gpt2 with an "
                 "untied head is not supported",
                 f.path());
        continue;
      }
      PX_FAIL("{}: unexpected tensor '{}' ({}, shape [{}]) for a {} model", f.path(), t.name,
              ggml_type_name(t.type), fmt::join(t.shape(), ", "),
              cfg.hf_type.empty() ? arch_name(cfg.arch) : cfg.hf_type);
    }
    plans.push_back(plan_slot(f, *it->second, t, ps, cfg.tie_embeddings));
  }
  for (const GgufSlot& s : layout)
    PX_CHECK(f.find_tensor(s.name) != nullptr, "{}: the file lacks tensor '{}'", f.path(), s.name);

  bool any_quant = false;
  std::vector<float> scratch;
  for (const Plan& p : plans)
    for (const Piece& pc : p.pieces) {
      load_piece(f, p, pc, ps, model.allocator(), scratch);
      any_quant = any_quant || pc.quant;
    }
  // A tied table held quantised keeps its dequantised f32 values too.
  if (any_quant) ps.drop_nf4_values(model.allocator());
}

}  // namespace parallm
