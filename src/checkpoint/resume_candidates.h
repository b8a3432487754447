// Where a run resumes from: --load DIR alone, or under --resume the
// checkpoints of --save and --snapshot, newest step first, so the newest
// complete one wins wherever it was written; a candidate whose files fail
// their digests gives way to the next (train_job.cpp).
#pragma once
#include <string>
#include <vector>

#include "train/config/checkpoint_config.h"

namespace parallm {

// Paths for open_checkpoint, newest step first; empty: a fresh start.
std::vector<std::string> resume_candidates(const CheckpointConfig& c);

}  // namespace parallm
