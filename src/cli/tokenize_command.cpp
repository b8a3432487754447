// `parallm tokenize INPUTS... --out PREFIX [--tokenizer DIR]`: text files to
// llm.c token shards, with the built-in byte-level tokenizer or the Hugging
// Face tokenizer.json in DIR (loaded before any input is read).
#include <fmt/core.h>

#include <memory>

#include "cli/commands.h"
#include "data/tokenize_files.h"
#include "data/tokenizer/tokenizer.h"

namespace parallm::cli {

void add_tokenize_command(CLI::App& app, CommandRegistry& reg) {
  struct Flags {
    std::vector<std::string> inputs;
    std::string out;
    double val_fraction = 0.05;
    std::string tokenizer;
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub =
      app.add_subcommand("tokenize", "text files -> token shards (byte-level, or --tokenizer)");
  sub->add_option("inputs", f->inputs, "text files (one document each)")->required();
  sub->add_option("--out", f->out, "output prefix: PREFIX_train.bin, PREFIX_val.bin")->required();
  sub->add_option("--val-fraction", f->val_fraction, "share of tokens for validation");
  sub->add_option("--tokenizer", f->tokenizer,
                  "Hugging Face tokenizer directory (tokenizer.json); default: byte-level");
  reg.actions.emplace_back(sub, [f]() {
    const std::unique_ptr<Tokenizer> tok =
        f->tokenizer.empty() ? make_byte_tokenizer() : load_tokenizer(f->tokenizer);
    TokenizeSummary s = tokenize_files(f->inputs, f->out, f->val_fraction, *tok);
    fmt::print("tokenized {} files ({} bytes): {} ({} tokens){}\n", s.documents, s.input_bytes,
               s.train_path, s.train_tokens,
               s.val_path.empty() ? std::string()
                                  : fmt::format(", {} ({} tokens)", s.val_path, s.val_tokens));
    return 0;
  });
}

}  // namespace parallm::cli
