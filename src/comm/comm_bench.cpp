#include "comm/comm_bench.h"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "base/error.h"
#include "tensor/half.h"

namespace parallm::comm {

double bus_factor(OpKind k, int n) {
  const double r = static_cast<double>(n);
  switch (k) {
    case OpKind::AllReduce:
      return 2.0 * (r - 1) / r;
    case OpKind::AllGather:
    case OpKind::ReduceScatter:
    case OpKind::AllToAll:
    case OpKind::Gather:
    case OpKind::Scatter:
      return (r - 1) / r;
    default:
      return 1.0;
  }
}

size_t parse_bytes(std::string_view s) {
  PX_CHECK(!s.empty(), "empty size");
  size_t mult = 1;
  const char last = s.back();
  if (last == 'K' || last == 'k') mult = size_t{1} << 10;
  if (last == 'M' || last == 'm') mult = size_t{1} << 20;
  if (last == 'G' || last == 'g') mult = size_t{1} << 30;
  if (mult != 1) s.remove_suffix(1);
  size_t v = 0;
  for (char c : s) {
    PX_CHECK(c >= '0' && c <= '9', "size '{}' is not a number with an optional K, M or G", s);
    v = v * 10 + static_cast<size_t>(c - '0');
  }
  return v * mult;
}

std::vector<OpKind> parse_op_kinds(std::string_view list) {
  std::vector<OpKind> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view name = list.substr(0, comma);
    bool found = false;
    for (int k = 0; k <= static_cast<int>(OpKind::AllToAll); ++k)
      if (op_kind_name(static_cast<OpKind>(k)) == name) {
        out.push_back(static_cast<OpKind>(k));
        found = true;
      }
    PX_CHECK(found && name != "barrier",
             "unknown collective '{}' (all_reduce, all_gather, reduce_scatter, broadcast, "
             "reduce, gather, scatter, all_to_all)",
             name);
    list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
  }
  return out;
}

namespace {

bool blocked(OpKind k) {  // the size is split into n blocks
  return k == OpKind::AllGather || k == OpKind::ReduceScatter || k == OpKind::AllToAll ||
         k == OpKind::Gather || k == OpKind::Scatter;
}

void store(void* p, DType t, size_t i, double v) {
  switch (t) {
    case DType::F32:
      static_cast<float*>(p)[i] = static_cast<float>(v);
      break;
    case DType::F64:
      static_cast<double*>(p)[i] = v;
      break;
    case DType::BF16:
      static_cast<uint16_t*>(p)[i] = f32_to_bf16(static_cast<float>(v));
      break;
    case DType::F16:
      static_cast<uint16_t*>(p)[i] = f32_to_f16(static_cast<float>(v));
      break;
    case DType::I32:
      static_cast<int32_t*>(p)[i] = static_cast<int32_t>(v);
      break;
    case DType::I64:
      static_cast<int64_t*>(p)[i] = static_cast<int64_t>(v);
      break;
    default:
      PX_FAIL("bench dtype {} unsupported", dtype_name(t));
  }
}

double load(const void* p, DType t, size_t i) {
  switch (t) {
    case DType::F32:
      return static_cast<const float*>(p)[i];
    case DType::F64:
      return static_cast<const double*>(p)[i];
    case DType::BF16:
      return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::F16:
      return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::I32:
      return static_cast<const int32_t*>(p)[i];
    case DType::I64:
      return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    default:
      PX_FAIL("bench dtype {} unsupported", dtype_name(t));
  }
}

// One size of one collective: buffers laid out per the in-place rules, with
// every rank's input element equal to rank + 1 (or block j + 1 at a root).
struct Case {
  OpKind kind;
  DType t;
  ReduceOp op;
  size_t count;
  int rank, n;
  bool in_place;
  char* a;  // send side
  char* b;  // recv side
  const void* send() const {
    if (!in_place) return a;
    if (kind == OpKind::AllGather || kind == OpKind::Gather) return at(b, count * rank);
    return kind == OpKind::ReduceScatter || kind == OpKind::Scatter ? a : b;
  }
  void* recv() const {
    if (in_place && kind == OpKind::ReduceScatter) return at(a, count * rank);
    if (in_place && kind == OpKind::Scatter) return at(a, count * rank);
    return b;
  }
  char* at(char* p, size_t elems) const { return p + elems * dtype_size(t); }
  size_t send_elems() const {
    return kind == OpKind::ReduceScatter || kind == OpKind::AllToAll || kind == OpKind::Scatter
               ? count * n
               : count;
  }
  void fill() const {
    void* s = const_cast<void*>(send());
    for (size_t i = 0; i < send_elems(); ++i)
      store(s, t, i, kind == OpKind::Scatter ? static_cast<double>(i / count + 1) : rank + 1.0);
  }
  double reduced() const {
    const double sum = n * (n + 1) / 2.0;
    switch (op) {
      case ReduceOp::Sum:
        return sum;
      case ReduceOp::Max:
        return n;
      case ReduceOp::Min:
        return 1;
      case ReduceOp::Avg:
        return t == DType::I32 || t == DType::I64 ? std::floor(sum / n)
                                                  : static_cast<float>(sum) / static_cast<float>(n);
    }
    return 0;
  }
  int64_t wrong() const {  // after one run of fill() + the collective
    const void* r = recv();
    auto expect = [&](size_t i) -> double {
      switch (kind) {
        case OpKind::AllReduce:
        case OpKind::ReduceScatter:
        case OpKind::Reduce:
          return reduced();
        case OpKind::AllGather:
        case OpKind::Gather:
        case OpKind::AllToAll:
          return static_cast<double>(i / count + 1);
        case OpKind::Scatter:
          return rank + 1.0;
        default:
          return 1.0;  // broadcast from rank 0
      }
    };
    const bool rooted_elsewhere = (kind == OpKind::Reduce || kind == OpKind::Gather) && rank != 0;
    if (rooted_elsewhere) return 0;
    const size_t m = blocked(kind) && kind != OpKind::ReduceScatter && kind != OpKind::Scatter
                         ? count * n
                         : count;
    int64_t bad = 0;
    for (size_t i = 0; i < m; ++i) bad += load(r, t, i) != expect(i);
    return bad;
  }
};

void ours_async(Communicator& c, const Case& k) {
  const void* s = k.send();
  void* r = k.recv();
  Work w;
  switch (k.kind) {
    case OpKind::AllReduce:
      w = c.all_reduce_async(s, r, k.count, k.t, k.op);
      break;
    case OpKind::AllGather:
      w = c.all_gather_async(s, r, k.count, k.t);
      break;
    case OpKind::ReduceScatter:
      w = c.reduce_scatter_async(s, r, k.count, k.t, k.op);
      break;
    case OpKind::Broadcast:
      w = c.broadcast_async(s, r, k.count, k.t, 0);
      break;
    case OpKind::Reduce:
      w = c.reduce_async(s, r, k.count, k.t, k.op, 0);
      break;
    case OpKind::Gather:
      w = c.gather_async(s, r, k.count, k.t, 0);
      break;
    case OpKind::Scatter:
      w = c.scatter_async(s, r, k.count, k.t, 0);
      break;
    case OpKind::AllToAll:
      w = c.all_to_all_async(s, r, k.count, k.t);
      break;
    default:
      PX_FAIL("bench: {} is not benchmarked", op_kind_name(k.kind));
  }
  w.wait();
}

void ours_blocking(Communicator& c, const Case& k) {
  const void* s = k.send();
  void* r = k.recv();
  switch (k.kind) {
    case OpKind::AllReduce:
      return c.all_reduce(s, r, k.count, k.t, k.op);
    case OpKind::AllGather:
      return c.all_gather(s, r, k.count, k.t);
    case OpKind::ReduceScatter:
      return c.reduce_scatter(s, r, k.count, k.t, k.op);
    case OpKind::Broadcast:
      return c.broadcast(s, r, k.count, k.t, 0);
    case OpKind::Reduce:
      return c.reduce(s, r, k.count, k.t, k.op, 0);
    case OpKind::Gather:
      return c.gather(s, r, k.count, k.t, 0);
    case OpKind::Scatter:
      return c.scatter(s, r, k.count, k.t, 0);
    case OpKind::AllToAll:
      return c.all_to_all(s, r, k.count, k.t);
    default:
      PX_FAIL("bench: {} is not benchmarked", op_kind_name(k.kind));
  }
}

// Seconds per call, the slowest rank's, over iters calls. With work before
// each call: the slowest rank's seconds per iteration less the ranks' mean
// time in that work (the work's wait for the last rank counts, its own
// time does not).
double time_calls(Communicator& c, const std::function<void()>& call, int iters,
                  const std::function<void()>& before = {}) {
  using clock = std::chrono::steady_clock;
  c.barrier();
  double work = 0;
  const auto t0 = clock::now();
  for (int i = 0; i < iters; ++i) {
    if (before) {
      const auto w0 = clock::now();
      before();
      work += std::chrono::duration<double>(clock::now() - w0).count();
    }
    call();
  }
  double dt = std::chrono::duration<double>(clock::now() - t0).count() / iters;
  c.all_reduce(&dt, 1, DType::F64, ReduceOp::Max);
  if (before) {
    work /= iters;
    c.all_reduce(&work, 1, DType::F64, ReduceOp::Sum);
    dt -= work / c.size();
  }
  return dt;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

struct AlignedFree {
  void operator()(char* p) const { std::free(p); }
};

}  // namespace

std::vector<CommBenchRow> run_comm_bench(Communicator& c, PeerCollectives* peer,
                                         const CommBenchOptions& o, std::ostream* out) {
  const int n = c.size(), rank = c.rank();
  const size_t es = dtype_size(o.dtype);
  PX_CHECK(o.step_factor >= 2 && o.min_bytes > 0 && o.min_bytes <= o.max_bytes && o.rounds > 0,
           "bench: need 0 < min bytes <= max bytes, a step factor >= 2 and rounds > 0");
  const size_t cap = (o.max_bytes + 63) / 64 * 64 + 64;
  std::unique_ptr<char, AlignedFree> a(static_cast<char*>(std::aligned_alloc(64, cap)));
  std::unique_ptr<char, AlignedFree> b(static_cast<char*>(std::aligned_alloc(64, cap)));
  PX_CHECK(a && b, "bench: cannot allocate 2 x {} bytes", cap);
  std::memset(a.get(), 0, cap);
  std::memset(b.get(), 0, cap);
  auto say = [&](const std::string& s) {
    if (out != nullptr) *out << s << std::flush;
  };
  say(
      fmt::format("# parallm bench comm: {} ranks, {}, {}, {}, {}; time: {} of {} rounds "
                  "(slowest rank), ours and {} alternating; ratio: median of paired rounds\n",
                  n, dtype_name(o.dtype), reduce_op_name(o.op),
                  o.in_place ? "in-place" : "out-of-place", o.async ? "async" : "blocking",
                  o.min_time ? "fastest" : "median", o.rounds, peer ? peer->name() : "no peer"));
  say(fmt::format(
      "# {:<14} {:>11} {:>10} | {:>10} {:>8} {:>8} {:>6} | {:>10} {:>8} {:>8} | {:>6}\n",
      "collective", "size(B)", "count", "time(us)", "algbw", "busbw", "#wrong",
      peer ? peer->name() + " us" : "-", "algbw", "busbw", "ratio"));
  std::vector<CommBenchRow> rows;
  for (OpKind kind : o.ops) {
    for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step_factor) {
      const size_t blocks = blocked(kind) ? static_cast<size_t>(n) : 1;
      const size_t count = bytes / es / blocks;
      if (count == 0) continue;
      Case k{kind, o.dtype, o.op, count, rank, n, o.in_place, a.get(), b.get()};
      CommBenchRow row{kind};
      row.count = count;
      row.bytes = count * es * blocks;
      k.fill();
      ours_blocking(c, k);
      int64_t wrong = k.wrong();
      c.all_reduce(&wrong, 1, DType::I64, ReduceOp::Sum);
      row.wrong = wrong;
      auto mine = [&] { o.async ? ours_async(c, k) : ours_blocking(c, k); };
      const bool with_peer =
          peer != nullptr && !o.before_call && peer->supports(kind, o.dtype, o.op);
      auto theirs = [&] { peer->run(kind, k.send(), k.recv(), count, o.dtype, o.op, 0, o.async); };
      mine();
      if (with_peer) theirs();
      // One call, with its work before it when there is some: a round's
      // length counts both.
      double one = time_calls(
          c,
          [&] {
            if (o.before_call) o.before_call();
            mine();
          },
          1);
      const int iters = static_cast<int>(
          std::clamp(o.round_ms / 1e3 / std::max(one, 1e-9), 1.0, double(o.max_iters)));
      std::vector<double> t_ours, t_peer;
      for (int r = 0; r < o.rounds; ++r) {
        if (with_peer && r % 2 == 1) t_peer.push_back(time_calls(c, theirs, iters));
        t_ours.push_back(time_calls(c, mine, iters, o.before_call));
        if (with_peer && r % 2 == 0) t_peer.push_back(time_calls(c, theirs, iters));
      }
      const double f = bus_factor(kind, n);
      auto stat = [&](const std::vector<double>& v) {
        return o.min_time ? *std::min_element(v.begin(), v.end()) : median(v);
      };
      row.us = stat(t_ours) * 1e6;
      row.algbw = row.bytes / (row.us * 1e3);
      row.busbw = row.algbw * f;
      row.has_peer = with_peer;
      if (with_peer) {
        row.peer_us = stat(t_peer) * 1e6;
        row.peer_algbw = row.bytes / (row.peer_us * 1e3);
        row.peer_busbw = row.peer_algbw * f;
        std::vector<double> paired(t_ours.size());
        for (size_t r = 0; r < paired.size(); ++r) paired[r] = t_peer[r] / t_ours[r];
        row.ratio = median(paired);
      }
      say(fmt::format("  {:<14} {:>11} {:>10} | {:>10.1f} {:>8.3f} {:>8.3f} {:>6} | ",
                      op_kind_name(kind), row.bytes, row.count, row.us, row.algbw, row.busbw,
                      row.wrong));
      say(with_peer ? fmt::format("{:>10.1f} {:>8.3f} {:>8.3f} | {:>6.3f}\n", row.peer_us,
                                  row.peer_algbw, row.peer_busbw, row.ratio)
                    : fmt::format("{:>10} {:>8} {:>8} | {:>6}\n", "n/a", "", "", ""));
      rows.push_back(row);
    }
  }
  double worst = 0;
  const CommBenchRow* at = nullptr;
  for (const auto& r : rows)
    if (r.has_peer && r.bytes >= (size_t{1} << 20) &&
        (r.kind == OpKind::AllReduce || r.kind == OpKind::AllGather ||
         r.kind == OpKind::ReduceScatter) &&
        (at == nullptr || r.ratio < worst)) {
      worst = r.ratio;
      at = &r;
    }
  if (at != nullptr)
    say(
        fmt::format("# target busbw >= 0.95 x {} for all_reduce, all_gather, reduce_scatter at "
                    ">= 1 MiB: {} (lowest ratio {:.3f}: {} at {} B)\n",
                    peer->name(), worst >= 0.95 ? "holds" : "MISSED", worst, op_kind_name(at->kind),
                    at->bytes));
  return rows;
}

}  // namespace parallm::comm
