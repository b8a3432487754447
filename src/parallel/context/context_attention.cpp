#include "parallel/context/context_attention.h"

#include "base/error.h"
#include "parallel/context/ulysses.h"

namespace parallm {
namespace {

// The chunks of the U cp ranks of ring member j, in the all-to-all's order.
ChunkSet member_chunks(const CpChunks& ch, int j, int u) {
  ChunkSet s{.len = ch.chunk_len()};
  for (int i = 0; i < u; ++i)
    for (int64_t p0 : ch.pos0_of(j * u + i)) s.pos0.push_back(p0);
  return s;
}

}  // namespace

ContextAttention::ContextAttention(const CpGroup& g, int64_t heads, int64_t kv_heads,
                                   int64_t head_dim)
    : g_(g), heads_(heads), kv_heads_(kv_heads), head_dim_(head_dim) {
  PX_CHECK(g.ulysses_degree >= 1 && g.size() % g.ulysses_degree == 0,
           "Ulysses degree ({}) does not divide cp ({})", g.ulysses_degree, g.size());
  check_ulysses_heads(heads, kv_heads, g.ulysses_degree);
}

ChunkSet ContextAttention::query_chunks(int64_t T) const {
  return member_chunks(cp_chunks(T, g_.size(), g_.load_balance), g_.ring_rank(), g_.ulysses_degree);
}

RingSpec ContextAttention::ring(int64_t T) const {
  const CpChunks ch = cp_chunks(T, g_.size(), g_.load_balance);
  RingSpec r{.ring = g_.ring};
  for (int j = 0; j < g_.ring_size(); ++j)
    r.kv_chunks.push_back(member_chunks(ch, j, g_.ulysses_degree));
  return r;
}

ops::AttnDims ContextAttention::core_dims(const LayerContext& c, const ops::AttnDims& base) const {
  ops::AttnDims d = base;
  const int u = g_.ulysses_degree;
  d.Hq = heads_ / u;
  d.Hkv = kv_heads_ / u;
  d.head0 = base.head0 + g_.ulysses_rank() * d.Hq;  // dropout: global head numbers
  return d;
}

ContextAttention::Saved ContextAttention::forward(const LayerContext& c, const Tensor& att,
                                                  const Tensor& q, const Tensor& k, const Tensor& v,
                                                  const ops::AttnDims& base, double scale,
                                                  AttnWork* work) const {
  const int64_t T = c.T * g_.size(), B = c.B, D = head_dim_, u = g_.ulysses_degree;
  const ops::AttnDims d = core_dims(c, base);
  const ChunkSet qs = query_chunks(T);
  Saved s;
  if (u == 1) {
    s.q = q;
    s.k = k;
    s.v = v;
    s.out = att;
  } else {
    s.q = c.activation({B, u * c.T, d.Hq * D});
    s.k = c.activation({B, u * c.T, d.Hkv * D});
    s.v = c.activation({B, u * c.T, d.Hkv * D});
    s.out = c.workspace({B, u * c.T, d.Hq * D});
    ulysses_seq_to_heads(*g_.ulysses, c.alloc, s.q.data<float>(), q.data<float>(), B, c.T, heads_,
                         D);
    ulysses_seq_to_heads(*g_.ulysses, c.alloc, s.k.data<float>(), k.data<float>(), B, c.T,
                         kv_heads_, D);
    ulysses_seq_to_heads(*g_.ulysses, c.alloc, s.v.data<float>(), v.data<float>(), B, c.T,
                         kv_heads_, D);
  }
  s.lse = c.activation({B, d.Hq, qs.tokens()});
  ring_attention_forward(ring(T), c.alloc, s.out.data<float>(), s.lse.data<float>(),
                         s.q.data<float>(), qs, s.k.data<float>(), s.v.data<float>(), d, scale,
                         work);
  if (u > 1) {
    ulysses_heads_to_seq(*g_.ulysses, c.alloc, att.data<float>(), s.out.data<float>(), B, c.T,
                         heads_, D);
    s.out = Tensor();
  }
  return s;
}

void ContextAttention::backward(const LayerContext& c, float* dq, float* dk, float* dv,
                                const float* datt, const float* att, const Saved& s,
                                const ops::AttnDims& base, double scale) const {
  const int64_t T = c.T * g_.size(), B = c.B, D = head_dim_, u = g_.ulysses_degree;
  const ops::AttnDims d = core_dims(c, base);
  const ChunkSet qs = query_chunks(T);
  if (u == 1) {
    ring_attention_backward(ring(T), c.alloc, dq, dk, dv, datt, s.q.data<float>(), qs,
                            s.k.data<float>(), s.v.data<float>(), s.out.data<float>(),
                            s.lse.data<float>(), d, scale);
    return;
  }
  Tensor dout = c.workspace({B, u * c.T, d.Hq * D});
  ulysses_seq_to_heads(*g_.ulysses, c.alloc, dout.data<float>(), datt, B, c.T, heads_, D);
  Tensor out = c.workspace({B, u * c.T, d.Hq * D});
  ulysses_seq_to_heads(*g_.ulysses, c.alloc, out.data<float>(), att, B, c.T, heads_, D);
  Tensor dqh = c.workspace({B, u * c.T, d.Hq * D});
  Tensor dkh = c.workspace({B, u * c.T, d.Hkv * D});
  Tensor dvh = c.workspace({B, u * c.T, d.Hkv * D});
  ring_attention_backward(ring(T), c.alloc, dqh.data<float>(), dkh.data<float>(), dvh.data<float>(),
                          dout.data<float>(), s.q.data<float>(), qs, s.k.data<float>(),
                          s.v.data<float>(), out.data<float>(), s.lse.data<float>(), d, scale);
  dout = out = Tensor();
  ulysses_heads_to_seq(*g_.ulysses, c.alloc, dq, dqh.data<float>(), B, c.T, heads_, D);
  ulysses_heads_to_seq(*g_.ulysses, c.alloc, dk, dkh.data<float>(), B, c.T, kv_heads_, D);
  ulysses_heads_to_seq(*g_.ulysses, c.alloc, dv, dvh.data<float>(), B, c.T, kv_heads_, D);
}

}  // namespace parallm
