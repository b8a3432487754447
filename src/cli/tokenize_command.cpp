// `parallm tokenize INPUTS... --out PREFIX [--tokenizer DIR] [--format F]`:
// text files to llm.c token shards (default) or Megatron indexed datasets
// (--format megatron: PREFIX_train.bin/.idx, one EOD-terminated document per
// input), with the built-in byte-level tokenizer or the Hugging Face
// tokenizer.json in DIR (loaded before any input is read).
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
    std::string format = "llmc";
  };
  auto f = std::make_shared<Flags>();
  CLI::App* sub =
      app.add_subcommand("tokenize", "text files -> token shards (byte-level, or --tokenizer)");
  sub->add_option("inputs", f->inputs, "text files (one document each)")->required();
  sub->add_option("--out", f->out, "output prefix: PREFIX_train.bin, PREFIX_val.bin")->required();
  sub->add_option("--val-fraction", f->val_fraction, "share of tokens for validation");
  sub->add_option("--tokenizer", f->tokenizer,
                  "Hugging Face tokenizer directory (tokenizer.json); default: byte-level");
  sub->add_option("--format", f->format,
                  "llmc (llm.c shards PREFIX_train.bin) or megatron (Megatron indexed datasets "
                  "PREFIX_train.bin + PREFIX_train.idx, EOD after every document)")
      ->check(CLI::IsMember({"llmc", "megatron"}));
  reg.actions.emplace_back(sub, [f]() {
    const std::unique_ptr<Tokenizer> tok =
        f->tokenizer.empty() ? make_byte_tokenizer() : load_tokenizer(f->tokenizer);
    const bool megatron = f->format == "megatron";
    TokenizeSummary s = tokenize_files(f->inputs, f->out, f->val_fraction, *tok,
                                       megatron ? TokenizeFormat::Megatron : TokenizeFormat::LlmC);
    const char* kind = megatron ? " (Megatron prefix: .bin + .idx)" : "";
    fmt::print("tokenized {} files ({} bytes): {}{} ({} tokens){}\n", s.documents, s.input_bytes,
               s.train_path, kind, s.train_tokens,
               s.val_path.empty() ? std::string()
                                  : fmt::format(", {} ({} tokens)", s.val_path, s.val_tokens));
    return 0;
  });
}

}  // namespace parallm::cli
