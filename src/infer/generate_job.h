// The `parallm generate` job: load a model (HF directory or checkpoint, split
// over tp = the job's ranks), encode the prompts with the model's tokenizer
// (--tokenizer DIR, else the --model directory's tokenizer.json, else the
// byte tokenizer), optionally through its chat template, generate, and report. One prompt streams
// its text to `out` as tokens arrive (text that may start a stop string is held back until it
// cannot); several prompts, or --json, give one JSON object per prompt. A summary line with prefill
// and decode tokens/s goes to `err`. Only the sampling rank (tp rank 0 of the last pipeline stage)
// writes.
#pragma once
#include <ostream>
#include <string>
#include <vector>

#include "comm/communicator.h"
#include "device/job_device.h"
#include "infer/generator.h"
#include "infer/inference_model.h"

namespace parallm {

struct GenerateJobOptions {
  ModelSource source;
  std::vector<std::string> prompts;
  std::string prompts_file;  // one prompt per line, after `prompts`
  std::string tokenizer;     // directory with tokenizer.json; empty: see above
  bool chat = false;         // each prompt is a user message through the chat template
  std::string system;        // chat: a system message before each prompt
  GenerateOptions gen;       // decode/stop/eos (and draft_model) filled in by the job
  // --draft-model: loaded beside the model when gen.draft_model_tokens > 0
  // (same vocabulary; one process only).
  ModelSource draft;
  std::string dtype = "fp32";
  bool json = false;
  int threads = 0;
  int tp = 1, pp = 1;  // tp x pp must equal the job's ranks
  std::string device = "cpu";  // cpu, test or cuda (device/job_device.h)
};

// world: all ranks of the job, a tp x pp grid (null: one process). device:
// where the model lives (device/cuda/open_job_device.h), its world replacing
// `world`; null: the host or the test device as opts.device says.
int run_generate_job(const GenerateJobOptions& opts, comm::Communicator* world, std::ostream& out,
                     std::ostream& err, JobDevice* device = nullptr);

}  // namespace parallm
