// Shared state of the MPI test binary (tests/comm/comm_dist_main.cpp): the
// runtime, a checking world communicator and the groups split from it by
// simple colour rules (rank % k and rank / k for k = 2, 3, standing in for
// tp/dp groups, plus a create_group subgroup), and typed test buffers whose
// expected contents are computed from (rank, index) in closed form.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "comm/mpi/mpi_runtime.h"
#include "tensor/dtype.h"

namespace parallm::comm::dist {

struct DistEnv {
  MpiRuntime* runtime = nullptr;
  Communicator* world = nullptr;  // check_collectives on, 30 s timeout
  // world first, then every group this rank belongs to.
  std::vector<Communicator*> groups;
};
DistEnv& dist_env();  // set up by comm_dist_main.cpp before the tests run

inline const std::vector<DType> kDTypes = {DType::F32, DType::BF16, DType::F16, DType::I32,
                                           DType::I64};
inline const std::vector<ReduceOp> kOps = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max,
                                           ReduceOp::Min};

// Bits of v stored as dtype t (rounded as the dtype rounds).
uint64_t encode(DType t, double v);
double decode(DType t, uint64_t bits);

// A typed buffer; values are set and compared through encode().
class Buf {
 public:
  Buf(DType t, size_t n) : t_(t), n_(n), bytes_(n * dtype_size(t) + 1) {}
  void set(size_t i, double v);
  uint64_t bits(size_t i) const;
  double get(size_t i) const { return decode(t_, bits(i)); }
  void* ptr(size_t i = 0) { return bytes_.data() + i * dtype_size(t_); }
  size_t size() const { return n_; }
  DType dtype() const { return t_; }

 private:
  DType t_;
  size_t n_;
  std::vector<unsigned char> bytes_;  // +1 so that ptr(n) is valid
};

// The expected result of reducing `per_rank(q)` over ranks q in [0, n) with
// op, as dtype t would hold it (fp32 avg for floating types, truncating
// integer avg for integer types).
template <class F>
double expect_reduce(ReduceOp op, DType t, int n, F per_rank) {
  double acc = per_rank(0);
  for (int q = 1; q < n; ++q) {
    const double v = per_rank(q);
    acc = op == ReduceOp::Max ? std::max(acc, v) : op == ReduceOp::Min ? std::min(acc, v) : acc + v;
  }
  if (op != ReduceOp::Avg) return acc;
  if (t == DType::I32 || t == DType::I64) return static_cast<double>(static_cast<int64_t>(acc) / n);
  return static_cast<double>(static_cast<float>(acc) / static_cast<float>(n));
}

// Reduction inputs: small integers (exact in bf16 even when summed over 8 ranks).
inline double reduce_value(int rank, size_t i) {
  return static_cast<double>(static_cast<int64_t>((i * 7 + rank * 13) % 17) - 8);
}
// Movement inputs: distinct per (rank, i % 13), exact in bf16.
inline double move_value(int rank, size_t i) { return rank * 17.0 + static_cast<double>(i % 13); }
// all_to_all inputs: distinct per (source, destination, i % 3), exact in bf16.
inline double a2a_value(int src, int dst, size_t i) {
  return src * 29.0 + dst * 3.0 + static_cast<double>(i % 3);
}

}  // namespace parallm::comm::dist

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace parallm::comm::dist {

// Fails (once, at the first wrong element) unless b[begin + i] holds
// expect(i) for i in [0, len).
template <class F>
void expect_values(const Buf& b, size_t begin, size_t len, F expect, const std::string& ctx) {
  for (size_t i = 0; i < len; ++i) {
    const uint64_t want = encode(b.dtype(), expect(i));
    if (b.bits(begin + i) != want) {
      ADD_FAILURE() << ctx << ": element " << begin + i << " is " << b.get(begin + i)
                    << ", expected " << decode(b.dtype(), want);
      return;
    }
  }
}

// Calls fn(comm, dtype, count, in_place, async) for every group, test dtype,
// odd small count (1, 7), in place or not, blocking or async.
template <class F>
void for_each_case(F fn) {
  for (Communicator* c : dist_env().groups)
    for (DType t : kDTypes)
      for (size_t n : {size_t{1}, size_t{7}})
        for (bool ip : {false, true})
          for (bool async : {false, true}) fn(*c, t, n, ip, async);
}

inline std::string case_name(const Communicator& c, std::string_view op, DType t, size_t n, bool ip,
                             bool async) {
  return fmt::format("{} on {}: {} count={}{}{}", op, c.label(), dtype_name(t), n,
                     ip ? " in-place" : "", async ? " async" : "");
}

}  // namespace parallm::comm::dist
