#include "train/calibrate/calibrate_job.h"

#include <fmt/ostream.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "base/error.h"
#include "plan/device_profile.h"
#include "train/calibrate/kernel_costs.h"
#include "train/calibrate/link_costs.h"
#include "train/gemm_peak_cache.h"

namespace parallm {

namespace {

double best_linear_rate(const OpCosts& c) {
  double best = 0;
  for (size_t i = 0; i < c.rows.size(); ++i)
    for (size_t j = 0; j < c.ins.size(); ++j)
      for (size_t k = 0; k < c.outs.size(); ++k) {
        const double flops = 2.0 * c.rows[i] * c.ins[j] * c.outs[k];
        best = std::max(best, flops / c.fwd_s[(i * c.ins.size() + j) * c.outs.size() + k]);
      }
  return best;
}

KernelCalibration grid(bool quick) {
  KernelCalibration k;
  if (quick) {
    k.rows = {64, 256};
    k.widths = {32, 128};
    k.attn_seq = {128};
    k.attn_dims = {32, 64};
    k.attn_dim_seq = 128;
    k.rounds = 1;
    k.round_s = 0.002;
  }
  return k;
}

}  // namespace

int run_calibrate(const CalibrateOptions& o, std::ostream& out) {
  const int cores = o.cores > 0 ? o.cores : static_cast<int>(std::thread::hardware_concurrency());
  PX_CHECK(cores >= 1 && o.devices_per_node >= 1 && o.link_ranks >= 2,
           "calibrate: cores ({}), devices per node ({}) and link ranks ({}, >= 2) out of range",
           cores, o.devices_per_node, o.link_ranks);
  const auto t0 = std::chrono::steady_clock::now();
  DeviceProfile d;
  d.name = o.name.empty() ? fmt::format("{}, {} cores", cpu_model_name(), cores) : o.name;
  d.cores = cores;
  d.precision = Precision::FP32;
  d.devices_per_node = o.devices_per_node;
  d.gemm_efficiency = 1.0;  // the measured kernels carry their own efficiency
  const KernelCalibration k = grid(o.quick);
  for (int threads : {1, cores}) {
    if (!d.ops.empty() && d.ops.back().threads == threads) continue;
    d.ops.push_back(measure_kernel_costs(threads, cores - threads, k));
    const OpCosts& c = d.ops.back();
    fmt::print(out,
               "kernels at {} thread{} ({} other cores busy): best linear {:.1f} GFLOP/s, "
               "attention (seq {}) {:.2f} + "
               "{:.2f} ns per unit, AdamW {:.2f} ns per parameter, memcpy {:.1f} GB/s\n",
               c.threads, c.threads == 1 ? "" : "s", cores - threads, best_linear_rate(c) / 1e9,
               c.attn_seq.back(), c.attn_fwd_s.back() * 1e9, c.attn_bwd_s.back() * 1e9,
               c.optimizer_s_per_param * 1e9, c.copy_bytes_per_s / 1e9);
  }
  d.peak_flops = best_linear_rate(d.ops.back());
  d.memory_bytes_per_s = 2.0 * d.ops.back().copy_bytes_per_s;  // memcpy reads and writes
  d.memory_bytes = static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
                   static_cast<double>(::sysconf(_SC_PAGE_SIZE)) / cores;

  namespace fs = std::filesystem;
  const fs::path work = fs::temp_directory_path() / fmt::format("parallm-calibrate-{}", ::getpid());
  fs::create_directories(work);
  LinkFit link, inter;
  ArrivalFit arrival;
  try {
    const LinkCalibration lc{
        .mpirun = o.mpirun, .ranks = o.link_ranks, .work_dir = work / "intra", .quick = o.quick};
    fs::create_directories(lc.work_dir);
    link = measure_link_cost(lc);
    arrival = measure_arrival_jitter(lc);
    if (!o.inter_node_mpirun.empty()) {
      LinkCalibration across = lc;
      across.mpirun = o.inter_node_mpirun;
      across.work_dir = work / "inter";
      fs::create_directories(across.work_dir);
      inter = measure_link_cost(across);
    }
  } catch (...) {
    out << "calibrate: the benchmark's files are kept in " << work.string() << "\n";
    throw;
  }
  fs::remove_all(work);
  // One launcher: every rank is on the same link (one machine); two: the
  // second measured the link between nodes.
  d.intra_node = link.link;
  d.inter_node = o.inter_node_mpirun.empty() ? link.link : inter.link;
  auto print_fit = [&](const char* what, const LinkFit& f) {
    fmt::print(out,
               "{} ({} ranks, all-reduce): alpha {:.1f} us, {:.2f} GB/s over all {} sizes "
               "(median error {:.0f}%); per size band (median error {:.0f}%):\n",
               what, o.link_ranks, f.link.alpha_s * 1e6, f.link.bytes_per_s / 1e9, f.rows,
               100 * f.median_rel_error, 100 * f.median_rel_error_bands);
    for (const LinkBand& b : f.link.bands)
      fmt::print(out, "  messages up to {:>8.0f} KiB: alpha {:6.1f} us, {:6.2f} GB/s\n",
                 b.max_bytes / 1024, b.alpha_s * 1e6, b.bytes_per_s / 1e9);
  };
  print_fit(o.inter_node_mpirun.empty() ? "link" : "intra-node link", link);
  if (!o.inter_node_mpirun.empty()) print_fit("inter-node link", inter);
  d.arrival_jitter = arrival.jitter;
  std::string waits;
  for (size_t i = 0; i < arrival.works_s.size(); ++i)
    waits += fmt::format("{}{:.2f} ms after {:.0f} ms", i ? ", " : "", arrival.waits_s[i] * 1e3,
                         arrival.works_s[i] * 1e3);
  fmt::print(out,
             "arrival waits ({} ranks, 1 MiB all-reduce after GEMM work, beyond back to back): "
             "{}; jitter {:.4f} s^(1/2)\n",
             o.link_ranks, waits, d.arrival_jitter);
  save_profile(d, o.out);
  fmt::print(out, "wrote {} ({}; {:.0f} s)\n", o.out, d.name,
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  return 0;
}

}  // namespace parallm
