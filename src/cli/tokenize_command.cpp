// `parallm tokenize INPUTS... --out PREFIX`: text files to llm.c token shards
// with the built-in byte-level tokenizer.
#include <fmt/core.h>

#include <memory>

#include "cli/commands.h"
#include "data/tokenize_files.h"

namespace parallm::cli {

void add_tokenize_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    std::vector<std::string> inputs;
    std::string out;
    double val_fraction = 0.05;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub = app.add_subcommand("tokenize", "text files -> token shards (byte-level)");
  sub->add_option("inputs", f->inputs, "text files (one document each)")->required();
  sub->add_option("--out", f->out, "output prefix: PREFIX_train.bin, PREFIX_val.bin")->required();
  sub->add_option("--val-fraction", f->val_fraction, "share of tokens for validation");
  reg.actions.emplace_back(sub, [f]() {
    TokenizeSummary s = tokenize_files(f->inputs, f->out, f->val_fraction);
    fmt::print("tokenized {} files ({} bytes): {} ({} tokens){}\n", s.documents, s.input_bytes,
               s.train_path, s.train_tokens,
               s.val_path.empty() ? std::string()
                                  : fmt::format(", {} ({} tokens)", s.val_path, s.val_tokens));
    return 0;
  });
}

}  // namespace parallm::cli
