// Entry of the MPI test binary (label dist, run under mpirun by ctest): one
// MpiRuntime, the world and split groups of DistEnv, gtest output from rank 0
// plus every rank's failures prefixed with its rank. The process exits
// non-zero on any rank's failure, so mpirun does too.
#include <gtest/gtest.h>

#include <cstdio>

#include "base/error.h"
#include "common/rank_failure_printer.h"
#include "dist_env.h"
#include "tensor/half.h"

namespace parallm::comm::dist {

DistEnv& dist_env() {
  static DistEnv env;
  return env;
}

uint64_t encode(DType t, double v) {
  switch (t) {
    case DType::F32: {
      float f = static_cast<float>(v);
      uint32_t u;
      std::memcpy(&u, &f, 4);
      return u;
    }
    case DType::BF16:
      return f32_to_bf16(static_cast<float>(v));
    case DType::F16:
      return f32_to_f16(static_cast<float>(v));
    case DType::I32:
      return static_cast<uint32_t>(static_cast<int32_t>(v));
    case DType::I64:
      return static_cast<uint64_t>(static_cast<int64_t>(v));
    default:
      PX_FAIL("test dtype {} unsupported", dtype_name(t));
  }
}

double decode(DType t, uint64_t b) {
  switch (t) {
    case DType::F32: {
      uint32_t u = static_cast<uint32_t>(b);
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case DType::BF16:
      return bf16_to_f32(static_cast<uint16_t>(b));
    case DType::F16:
      return f16_to_f32(static_cast<uint16_t>(b));
    case DType::I32:
      return static_cast<int32_t>(static_cast<uint32_t>(b));
    case DType::I64:
      return static_cast<double>(static_cast<int64_t>(b));
    default:
      PX_FAIL("test dtype {} unsupported", dtype_name(t));
  }
}

void Buf::set(size_t i, double v) {
  const uint64_t b = encode(t_, v);
  std::memcpy(ptr(i), &b, dtype_size(t_));  // little-endian: low bytes first
}

uint64_t Buf::bits(size_t i) const {
  uint64_t b = 0;
  std::memcpy(&b, bytes_.data() + i * dtype_size(t_), dtype_size(t_));
  return b;
}

namespace {
using testing::RankFailurePrinter;
}  // namespace

}  // namespace parallm::comm::dist

int main(int argc, char** argv) {
  using namespace parallm::comm;
  ::testing::InitGoogleTest(&argc, argv);
  int failed = 0;
  int rc = run_mpi_job([&](MpiRuntime& rt) {
    auto& env = dist::dist_env();
    CommOptions opts;
    opts.check_collectives = true;
    opts.timeout = std::chrono::seconds(30);
    auto world = rt.world(opts);
    env.runtime = &rt;
    env.world = world.get();
    env.groups.push_back(world.get());
    std::vector<std::unique_ptr<Communicator>> owned;
    const int r = world->rank(), n = world->size();
    for (int k : {2, 3}) {
      if (k >= n) continue;
      owned.push_back(
          world->split(r % k, r, "mod" + std::to_string(k) + "[" + std::to_string(r % k) + "]"));
      owned.push_back(
          world->split(r / k, r, "div" + std::to_string(k) + "[" + std::to_string(r / k) + "]"));
    }
    if (n >= 3) {  // the upper half, reversed, through MPI_Comm_create_group
      std::vector<int> members;
      for (int q = n - 1; q >= n / 2; --q) members.push_back(q);
      if (r >= n / 2) owned.push_back(world->subgroup(members, "upper"));
    }
    for (auto& g : owned) env.groups.push_back(g.get());
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    if (r != 0) {
      delete listeners.Release(listeners.default_result_printer());
      listeners.Append(new dist::RankFailurePrinter(r));
    }
    failed = RUN_ALL_TESTS();
    int any = failed;
    world->all_reduce(&any, 1, parallm::DType::I32, ReduceOp::Max);
    if (r == 0 && any != 0 && failed == 0) std::fprintf(stderr, "another rank failed\n");
    env.groups.clear();
    owned.clear();
    return any;
  });
  return rc;
}
