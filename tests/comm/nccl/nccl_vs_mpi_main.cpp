// The NCCL backend against the MPI backend on a real multi-rank job (label
// gpu, run by ctest under mpirun -np 2, one GPU per rank): every collective,
// dtype and reduce op, and a send/recv ring, on the same per-rank inputs;
// the NCCL results (device buffers, copied back) must equal the MPI results
// (exactly for integers and data movement, to rounding for floats, since
// NCCL's avg multiplies by 1/n before summing). With fewer visible GPUs than
// ranks it prints that it did not run and exits 77 (ctest: skipped).
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "comm/mpi/mpi_runtime.h"
#include "comm/nccl/nccl_world.h"
#include "dtype_values.h"  // tests/comm/nccl/
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device.h"
#include "tensor/half.h"

namespace parallm::comm {
namespace {

constexpr int kSkip = 77;

double value_at(DType t, const std::vector<uint8_t>& b, size_t i) {
  const uint8_t* p = b.data() + i * dtype_size(t);
  auto get = [&](auto x) {
    std::memcpy(&x, p, sizeof(x));
    return x;
  };
  switch (t) {
    case DType::F32:
      return get(float{});
    case DType::F64:
      return get(double{});
    case DType::BF16:
      return bf16_to_f32(get(uint16_t{}));
    case DType::F16:
      return f16_to_f32(get(uint16_t{}));
    case DType::I32:
      return get(int32_t{});
    case DType::I64:
      return static_cast<double>(get(int64_t{}));
    case DType::U8:
      return get(uint8_t{});
    case DType::I8:
      return get(int8_t{});
    default:
      return 0;
  }
}

std::vector<uint8_t> inputs(DType t, size_t n, int rank) {
  std::vector<uint8_t> out(n * dtype_size(t));
  for (size_t i = 0; i < n; ++i) {
    const int v = static_cast<int>((i * 5 + static_cast<size_t>(rank) * 11) % 21) - 10;
    if (!testing::put_small_int(out.data() + i * dtype_size(t), t, t == DType::U8 ? v + 10 : v))
      break;
  }
  return out;
}

class DevBytes {
 public:
  explicit DevBytes(const std::vector<uint8_t>& h) : n_(h.size()) {
    PX_CUDA(cudaMalloc(&p_, n_ ? n_ : 1));
    if (n_) PX_CUDA(cudaMemcpy(p_, h.data(), n_, cudaMemcpyHostToDevice));
  }
  ~DevBytes() { cudaFree(p_); }
  DevBytes(const DevBytes&) = delete;
  DevBytes& operator=(const DevBytes&) = delete;
  uint8_t* get() const { return static_cast<uint8_t*>(p_); }
  std::vector<uint8_t> host() const {
    std::vector<uint8_t> h(n_);
    PX_CUDA(cudaDeviceSynchronize());
    if (n_) PX_CUDA(cudaMemcpy(h.data(), p_, n_, cudaMemcpyDeviceToHost));
    return h;
  }

 private:
  void* p_ = nullptr;
  size_t n_;
};

struct Checker {
  int rank = 0;
  int failures = 0;
  int checks = 0;
  void same(const std::string& what, DType t, const std::vector<uint8_t>& nccl,
            const std::vector<uint8_t>& mpi) {
    ++checks;
    const bool ints = t == DType::I32 || t == DType::I64 || t == DType::U8 || t == DType::I8;
    const double tol = t == DType::BF16 ? 1e-2 : t == DType::F16 ? 1e-3 : 1e-6;
    const size_t n = mpi.size() / dtype_size(t);
    for (size_t i = 0; i < n; ++i) {
      const double a = value_at(t, nccl, i), b = value_at(t, mpi, i);
      if (ints ? a == b : std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b))) continue;
      std::fprintf(stderr, "rank %d: %s %s: element %zu is %g with NCCL, %g with MPI\n", rank,
                   what.c_str(), std::string(dtype_name(t)).c_str(), i, a, b);
      ++failures;
      return;
    }
  }
};

const std::vector<DType> kReducible = {DType::F32, DType::F64, DType::BF16,
                                       DType::F16, DType::I32, DType::I64};
const std::vector<DType> kAll = {DType::F32, DType::F64, DType::BF16, DType::F16,
                                 DType::I32, DType::I64, DType::U8,   DType::I8};
const std::vector<ReduceOp> kOps = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min};

void compare_all(Communicator& mpi, NcclCommunicator& nccl, Checker& c, const std::string& group) {
  const int r = mpi.rank(), p = mpi.size();
  const size_t n = 301;
  const int root = p - 1;
  for (DType t : kReducible) {
    const size_t es = dtype_size(t);
    for (ReduceOp op : kOps) {
      const std::string tag = group + " " + std::string(reduce_op_name(op));
      const auto in = inputs(t, n, r);
      std::vector<uint8_t> m(in.size());
      mpi.all_reduce(in.data(), m.data(), n, t, op);
      DevBytes d(in), out(std::vector<uint8_t>(in.size()));
      nccl.all_reduce(d.get(), out.get(), n, t, op);
      c.same(tag + " all_reduce", t, out.host(), m);
      nccl.all_reduce(d.get(), n, t, op);
      c.same(tag + " all_reduce in place", t, d.host(), m);

      DevBytes d2(in), rout(std::vector<uint8_t>(in.size()));
      std::vector<uint8_t> mr(in.size());
      mpi.reduce(in.data(), mr.data(), n, t, op, root);
      nccl.reduce(d2.get(), rout.get(), n, t, op, root);
      if (r == root) c.same(tag + " reduce", t, rout.host(), mr);

      const auto big = inputs(t, n * p, r);
      std::vector<uint8_t> ms(n * es);
      mpi.reduce_scatter(big.data(), ms.data(), n, t, op);
      DevBytes db(big), dout(std::vector<uint8_t>(n * es));
      nccl.reduce_scatter(db.get(), dout.get(), n, t, op);
      c.same(tag + " reduce_scatter", t, dout.host(), ms);
    }
  }
  for (DType t : kAll) {
    const size_t es = dtype_size(t);
    const auto in = inputs(t, n, r);
    const auto big = inputs(t, n * p, r);
    {
      std::vector<uint8_t> m = in;
      mpi.broadcast(m.data(), n, t, root);
      DevBytes d(in);
      nccl.broadcast(d.get(), n, t, root);
      c.same(group + " broadcast", t, d.host(), m);
    }
    {
      std::vector<uint8_t> m(n * p * es);
      mpi.all_gather(in.data(), m.data(), n, t);
      DevBytes d(in), out(std::vector<uint8_t>(n * p * es));
      nccl.all_gather(d.get(), out.get(), n, t);
      c.same(group + " all_gather", t, out.host(), m);
      mpi.gather(in.data(), m.data(), n, t, root);
      DevBytes g(std::vector<uint8_t>(n * p * es));
      nccl.gather(d.get(), g.get(), n, t, root);
      if (r == root) c.same(group + " gather", t, g.host(), m);
    }
    {
      std::vector<uint8_t> m(n * es);
      mpi.scatter(big.data(), m.data(), n, t, root);
      DevBytes d(big), out(std::vector<uint8_t>(n * es));
      nccl.scatter(d.get(), out.get(), n, t, root);
      c.same(group + " scatter", t, out.host(), m);
    }
    {
      std::vector<uint8_t> m(n * p * es);
      mpi.all_to_all(big.data(), m.data(), n, t);
      DevBytes d(big), out(std::vector<uint8_t>(n * p * es));
      nccl.all_to_all(d.get(), out.get(), n, t);
      c.same(group + " all_to_all", t, out.host(), m);
      nccl.all_to_all(d.get(), d.get(), n, t);
      c.same(group + " all_to_all in place", t, d.host(), m);
    }
    {
      auto count = [](int src, int dst) { return static_cast<size_t>((src * 2 + dst) % 3 + 1); };
      std::vector<size_t> sc(p), rc(p);
      for (int j = 0; j < p; ++j) {
        sc[j] = count(r, j);
        rc[j] = count(j, r);
      }
      const size_t ns = std::accumulate(sc.begin(), sc.end(), size_t{0});
      const size_t nr = std::accumulate(rc.begin(), rc.end(), size_t{0});
      const auto vin = inputs(t, ns, r);
      std::vector<uint8_t> m(nr * es);
      mpi.all_to_all_v(vin.data(), sc, m.data(), rc, t);
      DevBytes d(vin), out(std::vector<uint8_t>(nr * es));
      nccl.all_to_all_v(d.get(), sc, out.get(), rc, t);
      c.same(group + " all_to_all_v", t, out.host(), m);
    }
    {
      // A ring, posted recv first as ring attention does.
      const int to = (r + 1) % p, from = (r + p - 1) % p;
      std::vector<uint8_t> m(n * es);
      Work mr = mpi.recv_async(m.data(), n, t, from, 3);
      mpi.send(in.data(), n, t, to, 3);
      mr.wait();
      DevBytes d(in), out(std::vector<uint8_t>(n * es));
      Work nr = nccl.recv_async(out.get(), n, t, from, 3);
      Work ns = nccl.send_async(d.get(), n, t, to, 3);
      nr.wait();
      ns.wait();
      c.same(group + " send/recv ring", t, out.host(), m);
    }
  }
  nccl.barrier();
}

int run(MpiRuntime& rt) {
  CommOptions opts;
  opts.timeout = std::chrono::seconds(60);
  opts.check_collectives = true;
  std::unique_ptr<Communicator> world = rt.world(opts);
  const int gpus = cuda::device_count();
  if (gpus < world->size()) {
    if (world->rank() == 0)
      std::printf("SKIPPED: %d ranks need %d GPUs, %d visible: the NCCL-vs-MPI test did not run\n",
                  world->size(), world->size(), gpus);
    return kSkip;
  }
  const int device = world->rank() % gpus;
  std::unique_ptr<NcclCommunicator> nccl = make_nccl_world(*world, device);
  Checker c;
  c.rank = world->rank();
  compare_all(*world, *nccl, c, "world");
  // Split groups (rank % 2) and a subgroup of every rank but the first.
  std::unique_ptr<Communicator> ms = world->split(world->rank() % 2, world->rank(), "half");
  std::unique_ptr<Communicator> ns = nccl->split(world->rank() % 2, world->rank(), "half");
  compare_all(*ms, dynamic_cast<NcclCommunicator&>(*ns), c, "split");
  if (world->size() > 2) {
    std::vector<int> ranks(world->size() - 1);
    std::iota(ranks.begin(), ranks.end(), 1);
    if (world->rank() > 0) {
      auto msub = world->subgroup(ranks, "sub");
      auto nsub = nccl->subgroup(ranks, "sub");
      compare_all(*msub, dynamic_cast<NcclCommunicator&>(*nsub), c, "subgroup");
    }
  }
  int failures = c.failures;
  world->all_reduce(&failures, 1, DType::I32, ReduceOp::Sum);
  if (world->rank() == 0)
    std::printf("NCCL vs MPI on %d ranks: %d checks per rank, %d failures over all ranks\n",
                world->size(), c.checks, failures);
  return failures == 0 ? 0 : 1;
}

}  // namespace
}  // namespace parallm::comm

int main() { return parallm::comm::run_mpi_job(parallm::comm::run); }
