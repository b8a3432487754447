// `parallm export --checkpoint DIR --out HF_DIR`: a consolidated Hugging Face
// directory from a distributed checkpoint saved under any layout.
#include <fmt/core.h>

#include <memory>

#include "cli/commands.h"
#include "train/checkpoint_export.h"

namespace parallm::cli {

void add_export_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    std::string checkpoint, out, dtype = "F32";
    double max_shard_mb = 0;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("export", "write a Hugging Face directory from a checkpoint");
  sub->add_option("--checkpoint", f->checkpoint,
                  "checkpoint directory (its latest) or one step-NNNNNNN directory")
      ->required();
  sub->add_option("--out", f->out, "output Hugging Face directory")->required();
  sub->add_option("--dtype", f->dtype, "F32 or BF16");
  sub->add_option("--max-shard-mb", f->max_shard_mb,
                  "split the weights into files of at most this many MiB (0: one file)");
  reg.actions.emplace_back(sub, [f]() {
    auto dtype = dtype_from_name(f->dtype);
    PX_CHECK(dtype == DType::F32 || dtype == DType::BF16, "--dtype must be F32 or BF16, got '{}'",
             f->dtype);
    PX_CHECK(f->max_shard_mb >= 0, "--max-shard-mb must be >= 0, got {}", f->max_shard_mb);
    ExportResult r = export_checkpoint_to_hf(f->checkpoint, f->out, *dtype,
                                             static_cast<int64_t>(f->max_shard_mb * (1 << 20)));
    fmt::print("exported {} (step {}, {}) to {}\n", r.checkpoint, r.step, arch_name(r.model.arch),
               f->out);
    return 0;
  });
}

}  // namespace parallm::cli
