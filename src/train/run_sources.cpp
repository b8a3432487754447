// compose_run: the precedence of a train command line's sources. A resume
// (--load, or --resume with a checkpoint in --save) starts from the run the
// checkpoint recorded; where it resumes from is the file's and the flags'
// to say, so they are read once before the checkpoint is looked at.
#include "train/run_sources.h"

#include "base/error.h"
#include "model/model_catalog.h"
#include "checkpoint/checkpoint_load.h"
#include "train/config/deepspeed_config.h"
#include "train/train_job.h"

namespace parallm {
namespace {

// The flags that set the rank grid's sizes: any of them and the layout is
// the flags' alone (a resume does not keep the checkpoint's).
constexpr const char* kLayoutFlags[] = {"--dp", "--tp", "--pp", "--cp", "--ep"};

// The checkpoint's run. Its layout stays when the job has as many ranks as
// the checkpoint was saved on and no layout flag is given; a layout flag
// starts the grid afresh (dp options such as ZeRO stay unless flagged).
RunConfig resume_base(const RunFlags& flags, const PeekedCheckpoint& saved, bool has_config,
                      int world_size) {
  RunConfig base = resumable_run(saved.state);
  bool layout_flag = false;
  for (const char* name : kLayoutFlags) layout_flag = layout_flag || flags.given(name);
  ParallelismConfig& par = base.train.parallelism;
  if (layout_flag) {
    const DpOptions dp = par.dp;
    par = ParallelismConfig{};
    par.dp = dp;
    par.dp.dp = 1;
  } else if (!has_config) {
    const CheckpointLayout& l = saved.state.layout;
    PX_CHECK(l.world == world_size,
             "{} was saved under {} on {} ranks and this job has {}: give the layout to resume "
             "under (--dp, --tp, --pp, --cp; the checkpoint reshards)",
             saved.dir, layout_name(l), l.world, world_size);
  }
  return base;
}

// What --deepspeed accepted without a parallm meaning, said once.
void report_deepspeed(const DeepSpeedResult& ds, const std::string& path, std::ostream& log) {
  if (!ds.runtime_only.empty()) {
    std::string keys;
    for (const auto& k : ds.runtime_only) keys += (keys.empty() ? "" : ", ") + k;
    log << "parallm: " << path << ": ignoring DeepSpeed runtime-only keys: " << keys << "\n";
  }
  for (const auto& n : ds.notes) log << "parallm: " << path << ": " << n << "\n";
}

}  // namespace

RunConfig compose_run(const RunSources& src, const RunFlags& flags, const LaunchEnv& env,
                      std::ostream& log) {
  PX_CHECK(src.config.empty() || src.preset.empty(), "give --config or --model, not both");
  RunConfig probe = src.config.empty() ? RunConfig{} : load_run_config(src.config);
  flags.apply(probe);
  const std::string from = resume_source(probe.train.checkpoint);
  const auto saved = from.empty() ? std::nullopt : peek_checkpoint(from);
  RunConfig run;
  if (saved) {
    run = resume_base(flags, *saved, !src.config.empty(), env.world_size);
    if (!src.preset.empty()) run.model = catalog_model(src.preset);
    if (!src.config.empty()) run = load_run_config(src.config, run);
    if (env.rank == 0)
      log << "parallm: resuming with the run settings of " << saved->dir
          << (saved->state.run ? "" : " (an older checkpoint: its model, batch and schedule)")
          << "; flags given override them\n";
  } else if (!src.config.empty()) {
    run = load_run_config(src.config);
  } else {
    run.model = catalog_model(src.preset.empty() ? "gpt2-tiny" : src.preset);
  }
  DeepSpeedResult ds;
  if (!src.deepspeed.empty()) ds = apply_deepspeed_config(src.deepspeed, run);
  flags.apply(run);
  run.train.parallelism.infer_dp(env.world_size);
  if (!src.deepspeed.empty()) {
    resolve_deepspeed_batch(ds.batch, run.train.parallelism.dp.dp, flags.given("--micro-batch-size"),
                            flags.given("--global-batch-size"), run.train.training);
    if (env.rank == 0) report_deepspeed(ds, src.deepspeed, log);
  }
  return run;
}

}  // namespace parallm
