#include "train/checkpoint_cadence.h"

#include <fmt/ostream.h>

#include <chrono>

#include "io/checkpoint/checkpoint_dir.h"

namespace parallm {

CheckpointCadence::CheckpointCadence(const RunConfig& rc,
                                     const CheckpointSaveOptions::ShardHook& shard_hook,
                                     const Transformer& model, Trainer& trainer,
                                     comm::Communicator* world, int rank, std::ostream& log)
    : rc_(rc),
      rank_(rank),
      model_(model),
      trainer_(trainer),
      log_(log),
      checkpoints_{{rc.train.checkpoint.save_dir, rc.train.checkpoint.keep, shard_hook},
                   rc.train.checkpoint.async_save},
      snapshots_{{rc.train.checkpoint.snapshot_dir, 2, shard_hook}, true},
      writer_(world, std::chrono::milliseconds(
                         static_cast<int64_t>(rc.train.resilience.comm_timeout_s * 1000))) {
  const CheckpointConfig& c = rc.train.checkpoint;
  if ((!c.save_dir.empty() && c.async_save) || !c.snapshot_dir.empty())
    writer_.warm_up(model, trainer.data_parallel());
}

bool CheckpointCadence::after_step(int64_t done) {
  const CheckpointConfig& c = rc_.train.checkpoint;
  const int64_t steps = rc_.train.training.steps;
  const bool exit = c.exit_interval > 0 && done % c.exit_interval == 0 && done < steps;
  const bool save =
      !c.save_dir.empty() &&
      ((c.save_interval > 0 && done % c.save_interval == 0) || exit || done == steps);
  const bool snapshot = c.snapshot_interval > 0 && done % c.snapshot_interval == 0;
  if (save)
    write(checkpoints_, done);
  else if (snapshot)  // a checkpoint of the same step makes the snapshot redundant
    write(snapshots_, done);
  if (exit) fmt::print(log_, "exit interval {}: stopping after step {}\n", c.exit_interval, done);
  return exit;
}

void CheckpointCadence::finish() { report(writer_.finish()); }

void CheckpointCadence::write(const SaveTarget& to, int64_t done) {
  const ParallelismConfig& par = rc_.train.parallelism;
  const CheckpointLayout layout{par.world_size(),
                                par.dp.dp,
                                par.tp,
                                par.pp,
                                par.dp.zero,
                                std::string(dp_mode_name(par.dp.mode)),
                                par.sequence_parallel,
                                par.cp,
                                par.ep};
  const Optimizer* opt = trainer_.optimizer();
  TrainingState st =
      training_state_of(rc_.model, rc_.train, layout, done, opt ? opt->steps_taken() : done,
                        trainer_.updates(), trainer_.loss_scaler().state());
  st.moe_expert_bias = model_.expert_bias().values();
  const SaveResult r = writer_.save(to, st, model_, trainer_.data_parallel());
  report(r.completed);
  if (to.async)
    fmt::print(log_, "{} step {}: the step stalled {:.3f} s (copy), writing in the background\n",
               &to == &snapshots_ ? "snapshot" : "checkpoint", done, r.stall_s);
}

void CheckpointCadence::report(const std::optional<SavedCheckpoint>& s) const {
  if (!s || rank_ != 0) return;  // the directory is complete once rank 0 is done
  if (s->async)
    fmt::print(log_, "saved checkpoint {} ({:.1f} MB, written in the background in {:.2f} s)\n",
               s->dir, directory_bytes(s->dir) / 1e6, s->write_s);
  else
    fmt::print(log_, "saved checkpoint {} ({:.1f} MB in {:.2f} s)\n", s->dir,
               directory_bytes(s->dir) / 1e6, s->write_s);
}

}  // namespace parallm
