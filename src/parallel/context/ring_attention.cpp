// The two ring passes of ring_attention.h. A block is keys and values packed
// back to back in one buffer (one message per hop); in backward a second
// buffer carries dK and dV the same way. Step s of member m works on the
// block of member (m - s) mod n.
//
// Every message ends with its sender's post time (kStampFloats floats
// holding steady_clock nanoseconds: CLOCK_MONOTONIC, one clock for all
// processes of a host). A receiver that has to wait can then tell the part
// spent before the peer posted (skew: the peer's compute ran longer) from
// the part spent moving bytes, and records the first as peer wait
// (comm_counters.h); docs/context_parallel.md turns the two into the share
// of transfer time hidden behind attention. Across hosts the clocks differ
// and the split is not meaningful.
#include "parallel/context/ring_attention.h"

#include <algorithm>
#include <chrono>
#include <vector>

#include <omp.h>

#include "base/error.h"
#include "ops/activation.h"
#include "ops/copy.h"
#include "tensor/tensor.h"

namespace parallm {
namespace {

constexpr int kTagKv = 11;
constexpr int kTagDkv = 12;
constexpr int64_t kStampFloats = sizeof(int64_t) / sizeof(float);

// A message buffer: payload floats, then the stamp.
Tensor buffer(Allocator& alloc, int64_t payload) {
  return Tensor::zeros(alloc, {payload + kStampFloats}, DType::F32, MemTag::Communication);
}

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Stamps the message at msg (payload floats, then the stamp) with the time
// and sends it.
comm::Work send_stamped(const ops::Stream& st, comm::Communicator& c, float* msg, int64_t payload,
                        int to, int tag) {
  const int64_t t = now_ns();
  ops::copy_to_device(st, msg + payload, &t, sizeof t);
  return c.send_async(msg, payload + kStampFloats, DType::F32, to, tag);
}

comm::Work recv_stamped(comm::Communicator& c, float* msg, int64_t payload, int from, int tag) {
  return c.recv_async(msg, payload + kStampFloats, DType::F32, from, tag);
}

// Waits for n stamped messages from one peer, message i at msg + i *
// stride, as one wait: the part of it before the peer posted the last of
// them counts as peer wait. (While the peer was still computing its later
// pieces, the bytes of the earlier ones moved at no cost to the step.)
void wait_stamped(const ops::Stream& st, comm::Communicator& c, comm::Work* w, int64_t n,
                  const float* msg, int64_t payload, int64_t stride = 0) {
  if (std::all_of(w, w + n, [](comm::Work& x) { return x.done(); })) return;
  const int64_t t0 = now_ns();
  for (int64_t i = 0; i < n; ++i) w[i].wait();
  const int64_t t1 = now_ns();
  int64_t posted = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t t = 0;
    ops::copy_to_host(st, &t, msg + i * stride + payload, sizeof t);
    posted = std::max(posted, t);
  }
  c.note_peer_wait(comm::OpKind::Recv, std::clamp<int64_t>(posted - t0, 0, t1 - t0));
}

// The last hop home goes piece by piece. Piece (j, b, g) of a pair of
// halves (keys' and values' gradient, each (B, nk * len, Hkv, D)): key chunk
// j's rows of batch entry b and kv head g, the keys' then the values', then
// a stamp. Pieces are numbered in the order the last step finishes them.
struct Pieces {
  int64_t B, nk, len, Hkv, D;
  int64_t count() const { return nk * B * Hkv; }
  int64_t index(int64_t j, int64_t b, int64_t g) const { return (j * B + b) * Hkv + g; }
  int64_t floats() const { return 2 * len * D; }  // a piece's payload
  int64_t stride() const { return floats() + kStampFloats; }
  // Where token t of piece p starts in a half.
  int64_t at(int64_t p, int64_t t) const {
    const int64_t g = p % Hkv, b = (p / Hkv) % B, j = p / (Hkv * B);
    return (((b * nk + j) * len + t) * Hkv + g) * D;
  }
  // acc's piece p += in's (both halves, `half` apart).
  void add(const ops::Stream& st, float* acc, const float* in, int64_t half, int64_t p) const {
    for (int64_t h : {int64_t{0}, half})
      for (int64_t t = 0; t < len; ++t)
        ops::add_inplace(st, acc + h + at(p, t), in + h + at(p, t), D);
  }
  void pack(const ops::Stream& st, float* piece, const float* k, const float* v, int64_t p) const {
    for (int64_t t = 0; t < len; ++t) {
      ops::copy(st, piece + t * D, k + at(p, t), D * sizeof(float));
      ops::copy(st, piece + (len + t) * D, v + at(p, t), D * sizeof(float));
    }
  }
  void unpack(const ops::Stream& st, float* k, float* v, const float* piece, int64_t p) const {
    for (int64_t t = 0; t < len; ++t) {
      ops::copy(st, k + at(p, t), piece + t * D, D * sizeof(float));
      ops::copy(st, v + at(p, t), piece + (len + t) * D, D * sizeof(float));
    }
  }
};

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
                            const ops::AttnDims& base, double scale, AttnWork* work) {
  check_ring(r);
  const int n = r.size(), me = r.rank();
  const ops::Stream& st = ops::Stream::of(alloc);
  const int64_t half = base.B * r.kv_chunks[0].tokens() * base.Hkv * base.D;
  chunk_attention_init(st, out, lse, base.B, qs.tokens(), base.Hq, base.D);
  if (n == 1) {
    chunk_attention_forward(st, alloc, out, lse, q, qs, k, v, r.kv_chunks[0], base, scale, work);
    return;
  }
  Tensor cur = buffer(alloc, 2 * half), next = buffer(alloc, 2 * half);
  ops::copy(st, cur.data<float>(), k, half * sizeof(float));
  ops::copy(st, cur.data<float>() + half, v, half * sizeof(float));
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  for (int s = 0; s < n; ++s) {
    comm::Work sent, received;
    if (s + 1 < n) {  // the next block moves while this one is computed
      received = recv_stamped(*r.ring, next.data<float>(), 2 * half, from, kTagKv);
      sent = send_stamped(st, *r.ring, cur.data<float>(), 2 * half, to, kTagKv);
    }
    const float* kb = cur.data<float>();
    // Polling here lets MPI move the next block while this one is computed.
    const auto progress = [&] {
      received.test();
      sent.test();
    };
    chunk_attention_forward(st, alloc, out, lse, q, qs, kb, kb + half,
                            r.kv_chunks[(me - s + n) % n], base, scale, work, progress);
    wait_stamped(st, *r.ring, &received, 1, next.data<float>(), 2 * half);
    sent.wait();
    std::swap(cur, next);
  }
}

void ring_attention_backward(const RingSpec& r, Allocator& alloc, float* dq, float* dk, float* dv,
                             const float* dout, const float* q, const ChunkSet& qs, const float* k,
                             const float* v, const float* out, const float* lse,
                             const ops::AttnDims& base, double scale) {
  check_ring(r);
  const int n = r.size(), me = r.rank();
  const ops::Stream& st = ops::Stream::of(alloc);
  const int64_t half = base.B * r.kv_chunks[0].tokens() * base.Hkv * base.D;
  const auto bytes = [](int64_t floats) { return static_cast<size_t>(floats) * sizeof(float); };
  ops::zero(st, dq, bytes(base.B * qs.tokens() * base.Hq * base.D));
  ops::zero(st, dk, bytes(half));
  ops::zero(st, dv, bytes(half));
  if (n == 1) {
    chunk_attention_backward(st, alloc, dq, dk, dv, dout, q, qs, k, v, r.kv_chunks[0], out, lse,
                             base, scale);
    return;
  }
  // The last step works on member me + 1's block; every buffer has room for
  // that block's pieces (a stamp each) as well as for a whole message.
  const ChunkSet& tail = r.kv_chunks[(me + 1) % n];
  const Pieces p{base.B, static_cast<int64_t>(tail.pos0.size()), tail.len, base.Hkv, base.D};
  const int64_t cap = p.count() * p.stride() - kStampFloats;
  Tensor cur = buffer(alloc, cap), next = buffer(alloc, cap);
  // dkv: this step's accumulator of the block in hand (sent on after the
  // step); din: the accumulator of that block arriving from the member before.
  Tensor dkv = buffer(alloc, cap), dout_buf = buffer(alloc, cap), din = buffer(alloc, cap);
  ops::copy(st, cur.data<float>(), k, bytes(half));
  ops::copy(st, cur.data<float>() + half, v, bytes(half));
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  comm::Work dkv_sent;
  for (int s = 0; s + 1 < n; ++s) {
    comm::Work kv_sent, kv_received, dkv_received;
    kv_received = recv_stamped(*r.ring, next.data<float>(), 2 * half, from, kTagKv);
    kv_sent = send_stamped(st, *r.ring, cur.data<float>(), 2 * half, to, kTagKv);
    if (s > 0) dkv_received = recv_stamped(*r.ring, din.data<float>(), 2 * half, from, kTagDkv);
    float* acc = dkv.data<float>();
    ops::zero(st, acc, bytes(2 * half));
    const float* kb = cur.data<float>();
    const auto progress = [&] {
      kv_received.test();
      kv_sent.test();
      dkv_received.test();
      dkv_sent.test();
    };
    chunk_attention_backward(st, alloc, dq, acc, acc + half, dout, q, qs, kb, kb + half,
                             r.kv_chunks[(me - s + n) % n], out, lse, base, scale, progress);
    if (s > 0) {
      wait_stamped(st, *r.ring, &dkv_received, 1, din.data<float>(), 2 * half);
      ops::add_inplace(st, acc, din.data<float>(), 2 * half);
    }
    dkv_sent.wait();  // the previous step's message left its buffer
    std::swap(dkv, dout_buf);
    dkv_sent = send_stamped(st, *r.ring, dout_buf.data<float>(), 2 * half, to, kTagDkv);
    wait_stamped(st, *r.ring, &kv_received, 1, next.data<float>(), 2 * half);
    kv_sent.wait();
    std::swap(cur, next);
  }
  // The last step's block goes home after it, when no rank has compute
  // left to hide that hop. So its gradient leaves piece by piece (key chunk,
  // batch entry, kv head): a piece goes as soon as its pairs are done, under
  // the next piece's compute, and only the last piece's share is left
  // exposed. The sums are the same, in the same order (AttnPart). A kernel
  // call takes as many kv heads as there are threads, to keep them busy.
  // This member's own block comes home the same way, into dout_buf.
  comm::Work dkv_received = recv_stamped(*r.ring, din.data<float>(), 2 * half, from, kTagDkv);
  std::vector<comm::Work> home(p.count()), sent(p.count());
  const auto piece = [&p](Tensor& t, int64_t i) { return t.data<float>() + i * p.stride(); };
  float* acc = dkv.data<float>();
  ops::zero(st, acc, bytes(2 * half));
  const float* kb = cur.data<float>();
  const auto progress = [&] {
    dkv_received.test();
    dkv_sent.test();
    for (comm::Work& w : home) w.test();
    for (comm::Work& w : sent) w.test();
  };
  const int64_t heads = std::clamp<int64_t>(omp_get_max_threads(), 1, p.Hkv);
  bool first = true;
  for (int64_t j = 0; j < p.nk; ++j)
    for (int64_t b = 0; b < p.B; ++b)
      for (int64_t g0 = 0; g0 < p.Hkv; g0 += heads) {
        const int64_t g1 = std::min(p.Hkv, g0 + heads);
        chunk_attention_backward(st, alloc, dq, acc, acc + half, dout, q, qs, kb, kb + half, tail,
                                 out, lse, base, scale, progress,
                                 AttnPart{j, j + 1, b, b + 1, g0, g1});
        if (first) {
          wait_stamped(st, *r.ring, &dkv_received, 1, din.data<float>(), 2 * half);
          dkv_sent.wait();  // dout_buf is free for the pieces coming home
          for (int64_t i = 0; i < p.count(); ++i)
            home[i] = recv_stamped(*r.ring, piece(dout_buf, i), p.floats(), from, kTagDkv);
          first = false;
        }
        for (int64_t i = p.index(j, b, g0); i < p.index(j, b, g1 - 1) + 1; ++i) {
          p.add(st, acc, din.data<float>(), half, i);
          p.pack(st, piece(next, i), acc, acc + half, i);
          sent[i] = send_stamped(st, *r.ring, piece(next, i), p.floats(), to, kTagDkv);
        }
      }
  wait_stamped(st, *r.ring, home.data(), p.count(), dout_buf.data<float>(), p.floats(), p.stride());
  for (int64_t i = 0; i < p.count(); ++i) p.unpack(st, dk, dv, piece(dout_buf, i), i);
  for (comm::Work& w : sent) w.wait();
}

}  // namespace parallm
