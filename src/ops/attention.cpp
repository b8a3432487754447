#include "ops/attention.h"

#include <vector>

#include "base/error.h"
#include "ops/device_backend.h"

namespace parallm::ops {

namespace {

AttnDims on_host(const Stream& s, const AttnDims& d) {
  AttnDims h = d;
  h.doc_start = s.operand(d.doc_start);
  return h;
}

// The sequences with their block tables at host addresses (a test-device
// stream's tables are tagged).
const PagedSeq* host_seqs(const Stream& s, const PagedSeq* seqs, int64_t n_seqs,
                          std::vector<PagedSeq>& untagged) {
  if (s.device() == Device::CPU) return seqs;
  untagged.assign(seqs, seqs + n_seqs);
  for (PagedSeq& q_seq : untagged) q_seq.blocks = s.operand(q_seq.blocks);
  return untagged.data();
}

// 16-bit pools have CPU kernels only.
void require_cpu_for_lowp_pool(const Stream& s, cpu::LowpType t, const char* op) {
  PX_CHECK(s.backend() == nullptr,
           "{}: a {} KV cache has CPU kernels only; the GPU's paged attention reads f32 pools "
           "(use --kv-dtype f32 on a GPU)",
           op, t == cpu::LowpType::BF16 ? "bf16" : "f16");
  require_cpu_kernels(s, op);
}

}  // namespace

void attention_forward(const Stream& s, float* out, float* lse, const float* q, const float* k,
                       const float* v, const AttnDims& d, double scale) {
  if (const DeviceBackend* b = s.backend())
    return b->attention_forward(out, lse, q, k, v, d, scale);
  require_cpu_kernels(s, "attention_forward");
  cpu::attention_forward(s.operand(out), s.operand(lse), s.operand(q), s.operand(k), s.operand(v),
                         on_host(s, d), scale);
}

void attention_backward(const Stream& s, float* dq, float* dk, float* dv, const float* dout,
                        const float* q, const float* k, const float* v, const float* out,
                        const float* lse, const AttnDims& d, double scale, AttnBwdSplit split) {
  if (const DeviceBackend* b = s.backend())
    return b->attention_backward(dq, dk, dv, dout, q, k, v, out, lse, d, scale);
  require_cpu_kernels(s, "attention_backward");
  cpu::attention_backward_split(s.operand(dq), s.operand(dk), s.operand(dv), s.operand(dout),
                                s.operand(q), s.operand(k), s.operand(v), s.operand(out),
                                s.operand(lse), on_host(s, d), scale, split);
}

AttnBwdSplit attention_backward_auto_split(const Stream& s, const AttnDims& d) {
  // A device backend has one backward; the split is the CPU kernel's choice.
  if (s.backend() != nullptr) return AttnBwdSplit::Auto;
  require_cpu_kernels(s, "attention_backward_auto_split");
  return cpu::attention_backward_auto_split(d);
}

void paged_attention_forward(const Stream& s, float* out, float* lse, const float* q,
                             const float* k_pool, const float* v_pool, const PagedSeq* seqs,
                             int64_t n_seqs, const PagedAttnDims& d, double scale,
                             PagedAttnPath path) {
  // A device backend has one path; the path is the CPU kernel's choice.
  if (const DeviceBackend* b = s.backend())
    return b->paged_attention_forward(out, lse, q, k_pool, v_pool, seqs, n_seqs, d, scale);
  require_cpu_kernels(s, "paged_attention_forward");
  std::vector<PagedSeq> untagged;
  cpu::paged_attention_forward(s.operand(out), s.operand(lse), s.operand(q), s.operand(k_pool),
                               s.operand(v_pool), host_seqs(s, seqs, n_seqs, untagged), n_seqs, d,
                               scale, path);
}

void paged_attention_forward(const Stream& s, float* out, float* lse, const float* q,
                             const uint16_t* k_pool, const uint16_t* v_pool, cpu::LowpType t,
                             const PagedSeq* seqs, int64_t n_seqs, const PagedAttnDims& d,
                             double scale, PagedAttnPath path) {
  require_cpu_for_lowp_pool(s, t, "paged_attention_forward");
  std::vector<PagedSeq> untagged;
  cpu::paged_attention_forward(s.operand(out), s.operand(lse), s.operand(q), s.operand(k_pool),
                               s.operand(v_pool), t, host_seqs(s, seqs, n_seqs, untagged), n_seqs,
                               d, scale, path);
}

void paged_kv_write(const Stream& s, uint16_t* pool, cpu::LowpType t, int64_t num_blocks,
                    int64_t block_size, int64_t row_elems, const int32_t* blocks, int64_t n_blocks,
                    int64_t pos0, int64_t n, const float* src) {
  require_cpu_for_lowp_pool(s, t, "paged_kv_write");
  cpu::paged_kv_write(s.operand(pool), t, num_blocks, block_size, row_elems, s.operand(blocks),
                      n_blocks, pos0, n, s.operand(src));
}

void paged_kv_write(const Stream& s, float* pool, int64_t num_blocks, int64_t block_size,
                    int64_t row_elems, const int32_t* blocks, int64_t n_blocks, int64_t pos0,
                    int64_t n, const float* src) {
  if (const DeviceBackend* b = s.backend())
    return b->paged_kv_write(pool, num_blocks, block_size, row_elems, blocks, n_blocks, pos0, n, src);
  require_cpu_kernels(s, "paged_kv_write");
  cpu::paged_kv_write(s.operand(pool), num_blocks, block_size, row_elems, s.operand(blocks),
                      n_blocks, pos0, n, s.operand(src));
}

void attention_merge(const Stream& s, float* out, float* lse, const float* part_out,
                     const float* part_lse, int64_t B, int64_t Hq, int64_t D, int64_t nq,
                     int64_t len, int64_t i) {
  if (const DeviceBackend* b = s.backend())
    return b->attention_merge(out, lse, part_out, part_lse, B, Hq, D, nq, len, i);
  require_cpu_kernels(s, "attention_merge");
  cpu::attention_merge(s.operand(out), s.operand(lse), s.operand(part_out), s.operand(part_lse), B,
                       Hq, D, nq, len, i);
}

}  // namespace parallm::ops
