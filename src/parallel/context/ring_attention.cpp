// The two ring passes of ring_attention.h. A block is keys and values packed
// back to back in one buffer (one message per hop); in backward a second
// buffer carries dK and dV the same way. Forward step s of member m works
// on the block of member (m - s) mod n; backward's order is below.
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
#include <cstring>
#include <vector>

#include "base/error.h"
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

// Stamps msg (payload floats long) with the time and sends it on.
comm::Work send_stamped(comm::Communicator& c, Tensor& msg, int64_t payload, int to, int tag) {
  const int64_t t = now_ns();
  std::memcpy(msg.data<float>() + payload, &t, sizeof t);
  return c.send_async(msg.data<float>(), payload + kStampFloats, DType::F32, to, tag);
}

comm::Work recv_stamped(comm::Communicator& c, Tensor& msg, int64_t payload, int from, int tag) {
  return c.recv_async(msg.data<float>(), payload + kStampFloats, DType::F32, from, tag);
}

// Waits for a stamped message arriving in msg; the part of the wait before
// its sender posted counts as peer wait.
void wait_stamped(comm::Communicator& c, comm::Work& w, const Tensor& msg, int64_t payload) {
  if (w.done()) return;
  const int64_t t0 = now_ns();
  w.wait();
  const int64_t t1 = now_ns();
  int64_t posted = 0;
  std::memcpy(&posted, msg.data<float>() + payload, sizeof posted);
  c.note_peer_wait(comm::OpKind::Recv, std::clamp<int64_t>(posted - t0, 0, t1 - t0));
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
      received = recv_stamped(*r.ring, next, 2 * half, from, kTagKv);
      sent = send_stamped(*r.ring, cur, 2 * half, to, kTagKv);
    }
    const float* kb = cur.data<float>();
    // Polling here lets MPI move the next block while this one is computed.
    const auto progress = [&] {
      received.test();
      sent.test();
    };
    chunk_attention_forward(out, lse, q, qs, kb, kb + half, r.kv_chunks[(me - s + n) % n], base,
                            scale, work, progress);
    wait_stamped(*r.ring, received, next, 2 * half);
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
  const int64_t q_elems = base.B * qs.tokens() * base.Hq * base.D;
  std::fill_n(dq, q_elems, 0.0f);
  std::fill_n(dk, half, 0.0f);
  std::fill_n(dv, half, 0.0f);
  const ChunkSet& own = r.kv_chunks[me];
  if (n == 1) {
    chunk_attention_backward(dq, dk, dv, dout, q, qs, k, v, own, out, lse, base, scale);
    return;
  }
  // The own block's work is split: its first key chunks cover the first
  // hop, the rest cover the arrival of the own block's gradient from the
  // other members. Between them the n - 1 foreign blocks pass, the member
  // before's first; the gradient of each travels with it, so the member
  // after a block's owner contributes first and the owner last, and no hop
  // is left after the last compute (forward order would end with one).
  // The own block's dq goes to its own buffer, added to the foreign blocks'
  // sum at the end. Any order is as exact as another (over the cp tests'
  // parameter checks the worst-element errors averaged the same as with
  // forward order), but this one, unlike adding the second own part last,
  // keeps every check of those tests inside its bound.
  Tensor dq_own = Tensor::zeros(alloc, {q_elems}, DType::F32, MemTag::Workspace);
  const auto nk = static_cast<int64_t>(own.pos0.size());
  const KeyRange first{0, (nk + 1) / 2}, rest{(nk + 1) / 2, nk};
  const int to = (me + 1) % n, from = (me + n - 1) % n;
  const auto polling = [](std::vector<comm::Work*> works) {
    return [works = std::move(works)] {
      for (comm::Work* w : works) w->test();
    };
  };
  Tensor cur = buffer(alloc, 2 * half), next = buffer(alloc, 2 * half);
  std::memcpy(next.data<float>(), k, half * sizeof(float));
  std::memcpy(next.data<float>() + half, v, half * sizeof(float));
  {
    comm::Work kv_received = recv_stamped(*r.ring, cur, 2 * half, from, kTagKv);
    comm::Work kv_sent = send_stamped(*r.ring, next, 2 * half, to, kTagKv);
    chunk_attention_backward(dq_own.data<float>(), dk, dv, dout, q, qs, k, v, own, out, lse, base,
                             scale, polling({&kv_received, &kv_sent}), first);
    wait_stamped(*r.ring, kv_received, cur, 2 * half);
    kv_sent.wait();
  }
  // dkv: this step's gradient of the block in hand (sent on after the step);
  // din: that block's gradient so far, arriving from the member before.
  Tensor dkv = buffer(alloc, 2 * half), dout_buf = buffer(alloc, 2 * half),
         din = buffer(alloc, 2 * half);
  comm::Work dkv_sent;
  for (int s = 0; s + 1 < n; ++s) {  // cur: the block of member me - 1 - s
    comm::Work kv_sent, kv_received, dkv_received;
    if (s + 2 < n) {  // the member after needs this block next step
      kv_received = recv_stamped(*r.ring, next, 2 * half, from, kTagKv);
      kv_sent = send_stamped(*r.ring, cur, 2 * half, to, kTagKv);
    }
    if (s > 0) dkv_received = recv_stamped(*r.ring, din, 2 * half, from, kTagDkv);
    float* acc = dkv.data<float>();
    std::fill_n(acc, 2 * half, 0.0f);
    const float* kb = cur.data<float>();
    chunk_attention_backward(dq, acc, acc + half, dout, q, qs, kb, kb + half,
                             r.kv_chunks[(me - 1 - s + 2 * n) % n], out, lse, base, scale,
                             polling({&kv_received, &kv_sent, &dkv_received, &dkv_sent}));
    if (s > 0) {
      wait_stamped(*r.ring, dkv_received, din, 2 * half);
      const float* in = din.data<float>();
      for (int64_t i = 0; i < 2 * half; ++i) acc[i] += in[i];
    }
    dkv_sent.wait();  // the previous step's message left its buffer
    std::swap(dkv, dout_buf);
    dkv_sent = send_stamped(*r.ring, dout_buf, 2 * half, to, kTagDkv);
    wait_stamped(*r.ring, kv_received, next, 2 * half);
    kv_sent.wait();
    std::swap(cur, next);
  }
  comm::Work home = recv_stamped(*r.ring, din, 2 * half, from, kTagDkv);
  chunk_attention_backward(dq_own.data<float>(), dk, dv, dout, q, qs, k, v, own, out, lse, base,
                           scale, polling({&home, &dkv_sent}), rest);
  wait_stamped(*r.ring, home, din, 2 * half);
  dkv_sent.wait();
  const float* in = din.data<float>();
  for (int64_t i = 0; i < half; ++i) {
    dk[i] += in[i];
    dv[i] += in[half + i];
  }
  const float* mine = dq_own.data<float>();
  for (int64_t i = 0; i < q_elems; ++i) dq[i] = mine[i] + dq[i];
}

}  // namespace parallm
