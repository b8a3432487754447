// `parallm bench comm` (run under mpirun): the nccl-tests-style collective
// benchmark of comm/comm_bench.h, ours against raw MPI on the same buffers.
// Rank 0 prints the table.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "cli/commands.h"
#include "comm/comm_bench.h"
#include "comm/mpi/mpi_peer.h"
#include "comm/mpi/mpi_runtime.h"
#include "ops/matmul.h"

namespace parallm::cli {

namespace {
struct BenchCommFlags {
  std::string ops = "all_reduce,all_gather,reduce_scatter,broadcast,reduce,all_to_all";
  std::string min_bytes = "1K", max_bytes = "64M", dtype = "F32", op = "sum";
  comm::CommBenchOptions opts;
  bool no_peer = false, check = false;
  std::string json;  // rows as JSON (rank 0), for `parallm calibrate`
  double timeout_s = 300;
  double work_ms = 0;  // a GEMM before every call (0: back to back)
};

// A layer-sized f32 GEMM (256 x 384 by 384 x 1024, one thread's share of a
// micro-batch's linear) repeated to last about ms on this rank.
std::function<void()> gemm_work(double ms) {
  constexpr int64_t M = 256, K = 384, N = 1024;
  auto a = std::make_shared<std::vector<float>>(M * K, 0.5f);
  auto b = std::make_shared<std::vector<float>>(K * N, 0.25f);
  auto c = std::make_shared<std::vector<float>>(M * N, 0.0f);
  auto once = [=] {
    ops::gemm(ops::Stream::host(), false, false, M, N, K, 1.0f, a->data(), K, b->data(), N, 0.0f,
              c->data(), N);
  };
  once();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) once();
  const double one =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / 3;
  const int reps = std::max(1, static_cast<int>(std::lround(ms / 1e3 / one)));
  return [=] {
    for (int i = 0; i < reps; ++i) once();
  };
}
}  // namespace

void add_bench_command(CLI::App& app, CommandRegistry& reg) {
  CLI::App* bench = app.add_subcommand("bench", "benchmarks");
  bench->require_subcommand(1);
  auto f = std::make_shared<BenchCommFlags>();
  CLI::App* sub = bench->add_subcommand(
      "comm", "collective bandwidth sweep, ours and raw MPI side by side (run under mpirun)");
  sub->add_option("--ops", f->ops, "comma-separated collectives");
  sub->add_option("--min-bytes,-b", f->min_bytes, "smallest size (e.g. 1K)");
  sub->add_option("--max-bytes,-e", f->max_bytes, "largest size (e.g. 64M)");
  sub->add_option("--step-factor,-f", f->opts.step_factor, "size multiplier between rows");
  sub->add_option("--dtype,-d", f->dtype, "F32, BF16, F16, I32, I64, F64");
  sub->add_option("--op,-o", f->op, "sum, avg, max, min");
  sub->add_flag("--in-place", f->opts.in_place, "in-place buffers (NCCL's pointer rules)");
  sub->add_flag("--async", f->opts.async, "async calls + wait (MPI_I* + MPI_Wait for the peer)");
  sub->add_flag("--check", f->check, "turn on collective checking (measures its cost)");
  sub->add_flag("--no-peer", f->no_peer, "skip the raw MPI comparison");
  sub->add_option("--rounds", f->opts.rounds, "timed rounds per size (median reported)");
  sub->add_flag("--min-time", f->opts.min_time, "report the fastest round, not the median");
  sub->add_option("--round-ms", f->opts.round_ms, "target length of one round");
  sub->add_option("--comm-timeout", f->timeout_s, "seconds before a collective is reported");
  sub->add_option("--json", f->json, "also write the rows to this JSON file (rank 0)");
  sub->add_option("--work-ms", f->work_ms,
                  "run about this many ms of GEMM before every call; its own time is left out, "
                  "its wait for the last rank is not (no MPI comparison)");

  reg.actions.emplace_back(sub, [f]() {
    comm::CommBenchOptions o = f->opts;
    o.ops = comm::parse_op_kinds(f->ops);
    o.min_bytes = comm::parse_bytes(f->min_bytes);
    o.max_bytes = comm::parse_bytes(f->max_bytes);
    const auto dt = dtype_from_name(f->dtype);
    PX_CHECK(dt.has_value(), "unknown dtype '{}'", f->dtype);
    o.dtype = *dt;
    bool found = false;
    for (auto r :
         {comm::ReduceOp::Sum, comm::ReduceOp::Avg, comm::ReduceOp::Max, comm::ReduceOp::Min})
      if (comm::reduce_op_name(r) == f->op) o.op = r, found = true;
    PX_CHECK(found, "unknown reduce op '{}' (sum, avg, max, min)", f->op);
    PX_CHECK(f->work_ms >= 0 && f->work_ms <= 60e3, "--work-ms {} out of range [0, 60000]",
             f->work_ms);
    return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
      comm::CommOptions co;
      co.check_collectives = f->check;
      co.timeout = std::chrono::milliseconds(static_cast<int64_t>(f->timeout_s * 1000));
      auto world = rt.world(co);
      auto peer = f->no_peer ? nullptr : comm::make_mpi_peer(*world);
      if (f->work_ms > 0) o.before_call = gemm_work(f->work_ms);
      const auto rows =
          comm::run_comm_bench(*world, peer.get(), o, world->rank() == 0 ? &std::cout : nullptr);
      if (world->rank() == 0 && !f->json.empty()) {
        nlohmann::json j = {{"ranks", world->size()}, {"rows", nlohmann::json::array()}};
        for (const comm::CommBenchRow& r : rows)
          j["rows"].push_back({{"op", std::string(comm::op_kind_name(r.kind))},
                               {"bytes", r.bytes},
                               {"us", r.us},
                               {"busbw_gbs", r.busbw}});
        std::ofstream out(f->json);
        out << j.dump(1) << "\n";
        PX_CHECK(out.good(), "cannot write '{}'", f->json);
      }
      return 0;
    });
  });
}

}  // namespace parallm::cli
