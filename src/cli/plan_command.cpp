// `parallm plan`: the fastest layouts of a model on a cluster that fit its
// memory, with their predicted time breakdown and the winning command line
// (plan/planner.h, plan/step_time.h, docs/planner.md).
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>

#include "base/error.h"
#include "cli/commands.h"
#include "io/hf_config.h"
#include "model/model_catalog.h"
#include "plan/ep_load.h"
#include "plan/planner.h"
#include "train/config/train_config.h"

namespace parallm::cli {

void add_plan_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    std::string model = "gpt3-175b", profile = "a100-80gb", device_memory;
    PlanRequest r;
    int devices_per_node = 0;
    std::vector<std::string> fixed, ep_load;
    std::string load_from;
    int load_warmup = 2;
    size_t top = 5;
    std::string json, activations;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand(
      "plan", "rank every layout of a model on N devices by predicted step time (docs/planner.md)");
  sub->add_option("--model", f->model,
                  "preset (gpt3-175b, llama2-70b, ...), an HF config.json or a run file (.toml)");
  sub->add_option("--devices", f->r.devices, "devices in the cluster");
  sub->add_option("--devices-per-node", f->devices_per_node,
                  "devices sharing the fast link (default: the profile's)");
  sub->add_option("--device-memory", f->device_memory,
                  "memory per device, e.g. 80GB (default: the profile's)");
  sub->add_option("--profile", f->profile,
                  "device profile: a100-80gb, h100-80gb or a JSON file of the same fields");
  sub->add_option("--seq-len,--seq-length", f->r.seq_len, "sequence length");
  sub->add_option("--global-batch-size", f->r.global_batch, "sequences per step");
  sub->add_option(
      "--fixed", f->fixed,
      "sizes to keep, e.g. --fixed tp=8 pp=16 sp=0 schedule=1f1b (tp pp dp cp mb v zero "
      "recompute sp schedule)");
  sub->add_option("--moe-ep-load", f->ep_load,
                  "MoE: the busiest ep rank's expert rows over the mean, per ep size, e.g. "
                  "--moe-ep-load 2=1.3 4=1.5 (default: even, 1)");
  sub->add_option("--moe-load-from", f->load_from,
                  "MoE: take --moe-ep-load from a training run's metrics JSONL "
                  "(moe.ep_max_load, median over its records)");
  sub->add_option("--moe-load-warmup", f->load_warmup,
                  "records of --moe-load-from to skip first (default 2)");
  sub->add_option("--activations", f->activations,
                  "activation memory to prune by: megatron (Korthikanti et al.) or parallm (this "
                  "implementation's layers; default: parallm for a calibrated profile, megatron "
                  "for a built-in one)");
  sub->add_option("--tie-tolerance", f->r.tie_tolerance,
                  "layouts predicted within this fraction of the fastest count as equal; the one "
                  "with the fewest blocking exchanges per step, then the least time on the wire, "
                  "leads (default 0.02; 0: by time)");
  sub->add_option("--top", f->top, "layouts to print (default 5)");
  sub->add_option("--json", f->json, "also write the listed layouts and their times as JSON");
  reg.actions.emplace_back(sub, [f]() {
    PlanRequest r = f->r;
    const auto ext = std::filesystem::path(f->model).extension();
    r.model = ext == ".json"   ? read_hf_config(f->model)
              : ext == ".toml" ? load_run_config(f->model).model
                               : catalog_model(f->model);
    r.device = std::filesystem::path(f->profile).extension() == ".json"
                   ? load_profile(f->profile)
                   : builtin_profile(f->profile);
    if (f->devices_per_node > 0) r.device.devices_per_node = f->devices_per_node;
    if (!f->device_memory.empty()) r.device.memory_bytes = parse_bytes(f->device_memory);
    r.fixed = parse_fixed(f->fixed);
    r.activation_model = f->activations.empty() ? default_activation_model(r.device)
                                                : activation_model_from_name(f->activations);
    PX_CHECK(f->load_from.empty() || f->ep_load.empty(),
             "give --moe-ep-load or --moe-load-from, not both");
    r.ep_max_load = f->load_from.empty() ? parse_ep_load(f->ep_load)
                                         : read_ep_load(f->load_from, f->load_warmup);
    const auto t0 = std::chrono::steady_clock::now();
    const PlanResult res = plan_layouts(r, f->top);
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::cout << fmt::format(
        "{} on {} x {} ({} per node, {:.0f} GB), seq {}, global batch {}: {} layouts, {} fit "
        "memory with {} activations ({:.2f} s)\n",
        f->model, r.devices, r.device.name, r.device.devices_per_node, r.device.memory_bytes / 1e9,
        r.seq_len, r.global_batch, res.enumerated, res.fit,
        activation_model_name(r.activation_model), secs);
    if (res.best.empty()) {
      std::cout << "no layout fits: try more devices, a shorter sequence or a smaller batch\n";
      return 1;
    }
    if (res.tied > 1)
      std::cout << fmt::format(
          "{} layouts predicted within {:.0f}% of the fastest: the model cannot rank them, so "
          "the one with the fewest blocking exchanges per step (then the least time on the "
          "wire) leads (--tie-tolerance)\n",
          res.tied, 100 * r.tie_tolerance);
    std::cout << fmt::format(
        "{:>3} {:<58} {:>8} {:>8} {:>7} {:>6} | {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} {:>7} "
        "{:>6}\n",
        "#", "layout", "mem GB", "step s", "TFLOP/s", "MFU", "comp", "elem", "tp/cp/ep", "wait",
        "bubble", "dp+opt", "shared", "syncs");
    int i = 0;
    for (const PlanCandidate& c : res.best) {
      const StepTime& t = c.time;
      std::cout << fmt::format(
          "{:>3} {:<58} {:>8.1f} {:>8.2f} {:>7.1f} {:>5.1f}% | {:>7.2f} {:>7.2f} {:>7.2f} "
          "{:>7.2f} {:>7.2f} {:>7.2f} {:>7.2f} {:>6.0f}\n",
          ++i, describe_layout(c.query), c.memory_bytes / 1e9, t.total_s,
          t.hw_flops_per_device / 1e12, 100 * t.mfu, t.compute_s, t.elementwise_s,
          t.tp_comm_s + t.cp_comm_s + t.ep_comm_s + t.ep_imbalance_s, t.sync_wait_s,
          t.pp_bubble_s + t.pp_p2p_s, t.dp_exposed_s + t.optimizer_s, t.core_sharing_s, t.syncs);
    }
    std::cout << "\n" << train_command_line(res.best.front(), f->model, r.global_batch) << "\n";
    if (!f->json.empty()) {
      std::ofstream out(f->json);
      out << plan_result_json(res, f->model, r.global_batch).dump(1) << "\n";
      PX_CHECK(out.good(), "cannot write '{}'", f->json);
    }
    return 0;
  });
}

}  // namespace parallm::cli
