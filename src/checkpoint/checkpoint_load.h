// Loading a distributed checkpoint into the current layout, whatever the
// layout it was saved under: each rank fills exactly what it holds (its tp
// slices of every tensor, and the optimizer range it owns) from whichever
// saved pieces overlap it, reading only those pieces' bytes. Before any of
// that the checkpoint is verified: the manifest must exist, every file have
// its recorded size, and every file its checksum (the hashing is split over
// the ranks, and every rank reports the same first bad file).
#pragma once
#include <memory>
#include <optional>
#include <string>

#include "comm/communicator.h"
#include "io/checkpoint/shard_file.h"
#include "model/config.h"
#include "nn/parameters.h"
#include "optim/optimizer.h"
#include "checkpoint/checkpoint_state.h"

namespace parallm {

struct OpenedCheckpoint {
  std::string dir;  // the step directory
  TrainingState state;
  std::unique_ptr<ShardSet> shards;
};

// path: a checkpoint directory (its `latest` is followed) or a step directory.
// Collective over world (null: one process). Throws naming the bad file, or
// that `path` holds no checkpoint.
OpenedCheckpoint open_checkpoint(const std::string& path, comm::Communicator* world);
// Whether `path` holds any checkpoint (for --resume: none means a fresh start).
bool has_checkpoint(const std::string& path);
// The training state of the checkpoint `path` names, read without verifying
// the files (open_checkpoint does that): what a command line reads before
// MPI starts to take the run settings from it. nullopt: no checkpoint.
struct PeekedCheckpoint {
  std::string dir;  // the step directory
  TrainingState state;
};
std::optional<PeekedCheckpoint> peek_checkpoint(const std::string& path);

// Values of every parameter this rank holds (its local shards, whole), into
// the flat values; call before ZeRO takes its shards. vocab: the model's
// vocabulary (rows beyond it are tp padding).
void load_checkpoint_values(const OpenedCheckpoint& ck, const ParameterSet& ps, int64_t vocab);
// Every parameter ps holds (a whole model or a pipeline stage's subset) must
// be saved in the checkpoint, and every saved tensor must be a parameter of
// the model cfg describes (whichever stage holds it), else the checkpoint is
// of another model.
void check_checkpoint_covers_model(const OpenedCheckpoint& ck, const ParameterSet& ps,
                                   const ModelConfig& cfg);
// The named state buffers of the flat range opt owns (any optimizer; the
// checkpoint must have been saved with the same one), and its step count.
void load_checkpoint_optimizer(const OpenedCheckpoint& ck, const ParameterSet& ps, Optimizer& opt,
                               int64_t vocab);

}  // namespace parallm
