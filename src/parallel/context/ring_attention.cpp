// The two ring passes of ring_attention.h. A block is keys and values packed
// back to back in one buffer (one message per hop); in backward a second
// buffer carries dK and dV the same way. Step s of member m works on the
// block of member (m - s) mod n.
#include "parallel/context/ring_attention.h"

#include <cstring>

#include "base/error.h"
#include "tensor/tensor.h"

namespace parallm {
namespace {

constexpr int kTagKv = 11;
constexpr int kTagDkv = 12;

Tensor buffer(Allocator& alloc, int64_t n) {
  return Tensor::zeros(alloc, {n}, DType::F32, MemTag::Communication);
}

void check_ring(const RingSpec& r) {
  PX_CHECK(static_cast<int>(r.kv_chunks.size()) == r.size(),
           "ring attention: {} key chunk sets for a ring of {}", r.kv_chunks.size(), r.size());
  for (const ChunkSet& s : r.kv_chunks)
    PX_CHECK(s.tokens() == r.kv_chunks[0].tokens(),
             "ring attention: members hold different numbers of tokens ({} and {})", s.tokens(),
             r.kv_chunks[0].tokens());
}

}  // namespace

void ring_attention_forward(const RingSpec& r, Allocator& alloc, float* out, float* lse,
                            const float* q, const ChunkSet& qs, const float* k, const float* v,
                            const cpu::AttnDims& base, double scale, AttnWork* work) {
  check_ring(r);
  const int n = r.size(), me = r.rank();
  const int64_t half = base.B * r.kv_chunks[0].tokens() * base.Hkv * base.D;
  chunk_attention_init(out, lse, base.B, qs.tokens(), base.Hq, base.D);
  if (n == 1) {
    chunk_attention_forward(out, lse, q, qs, k, v, r.kv_chunks[0], base, scale, work);
    return;
  }
  Tensor cur = buffer(alloc, 2 * half), next = buffer(alloc, 2 * half);
  std::memcpy(cur.data<float>(), k, half * sizeof(float));
  std::memcpy(cur.data<float>() + half, v, half * sizeof(float));
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  for (int s = 0; s < n; ++s) {
    comm::Work sent, received;
    if (s + 1 < n) {  // the next block moves while this one is computed
      received = r.ring->recv_async(next.data<float>(), 2 * half, DType::F32, from, kTagKv);
      sent = r.ring->send_async(cur.data<float>(), 2 * half, DType::F32, to, kTagKv);
    }
    const float* kb = cur.data<float>();
    // Polling here lets MPI move the next block while this one is computed.
    const auto progress = [&] {
      received.test();
      sent.test();
    };
    chunk_attention_forward(out, lse, q, qs, kb, kb + half, r.kv_chunks[(me - s + n) % n], base,
                            scale, work, progress);
    received.wait();
    sent.wait();
    std::swap(cur, next);
  }
}

void ring_attention_backward(const RingSpec& r, Allocator& alloc, float* dq, float* dk, float* dv,
                             const float* dout, const float* q, const ChunkSet& qs, const float* k,
                             const float* v, const float* out, const float* lse,
                             const cpu::AttnDims& base, double scale) {
  check_ring(r);
  const int n = r.size(), me = r.rank();
  const int64_t half = base.B * r.kv_chunks[0].tokens() * base.Hkv * base.D;
  std::fill_n(dq, base.B * qs.tokens() * base.Hq * base.D, 0.0f);
  std::fill_n(dk, half, 0.0f);
  std::fill_n(dv, half, 0.0f);
  if (n == 1) {
    chunk_attention_backward(dq, dk, dv, dout, q, qs, k, v, r.kv_chunks[0], out, lse, base, scale);
    return;
  }
  Tensor cur = buffer(alloc, 2 * half), next = buffer(alloc, 2 * half);
  // dkv: this step's accumulator of the block in hand (sent on after the
  // step); din: the accumulator of that block arriving from the member before.
  Tensor dkv = buffer(alloc, 2 * half), dout_buf = buffer(alloc, 2 * half),
         din = buffer(alloc, 2 * half);
  std::memcpy(cur.data<float>(), k, half * sizeof(float));
  std::memcpy(cur.data<float>() + half, v, half * sizeof(float));
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  comm::Work dkv_sent;
  for (int s = 0; s < n; ++s) {
    comm::Work kv_sent, kv_received, dkv_received;
    if (s + 1 < n) {
      kv_received = r.ring->recv_async(next.data<float>(), 2 * half, DType::F32, from, kTagKv);
      kv_sent = r.ring->send_async(cur.data<float>(), 2 * half, DType::F32, to, kTagKv);
    }
    if (s > 0)
      dkv_received = r.ring->recv_async(din.data<float>(), 2 * half, DType::F32, from, kTagDkv);
    float* acc = dkv.data<float>();
    std::fill_n(acc, 2 * half, 0.0f);
    const float* kb = cur.data<float>();
    const auto progress = [&] {
      kv_received.test();
      kv_sent.test();
      dkv_received.test();
      dkv_sent.test();
    };
    chunk_attention_backward(dq, acc, acc + half, dout, q, qs, kb, kb + half,
                             r.kv_chunks[(me - s + n) % n], out, lse, base, scale, progress);
    if (s > 0) {
      dkv_received.wait();
      const float* in = din.data<float>();
      for (int64_t i = 0; i < 2 * half; ++i) acc[i] += in[i];
    }
    dkv_sent.wait();  // the previous step's message left its buffer
    std::swap(dkv, dout_buf);
    dkv_sent = r.ring->send_async(dout_buf.data<float>(), 2 * half, DType::F32, to, kTagDkv);
    kv_received.wait();
    kv_sent.wait();
    std::swap(cur, next);
  }
  // After a full turn this member's own block comes home with every query's share.
  r.ring->recv(din.data<float>(), 2 * half, DType::F32, from, kTagDkv);
  dkv_sent.wait();
  std::memcpy(dk, din.data<float>(), half * sizeof(float));
  std::memcpy(dv, din.data<float>() + half, half * sizeof(float));
}

}  // namespace parallm
