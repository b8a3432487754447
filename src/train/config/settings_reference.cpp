// settings_reference: one Markdown table per run-file table, a row per
// setting in declaration order (key, flags, value, whether a checkpoint's
// run record keeps it, help), then the flags `parallm generate` and `parallm
// serve` share (train/config/inference_flags.h).
#include "train/config/settings_reference.h"

#include <fmt/format.h>

#include "train/config/inference_flags.h"
#include "train/config/lora_serving_flags.h"
#include "train/config/speculative_flags.h"

namespace parallm {
namespace {

std::string value_kind(const Setting& s) {
  if (s.switch_to) return *s.switch_to ? "switch (sets true)" : "switch (sets false)";
  switch (s.kind) {
    case SettingKind::Bool: return "true/false";
    case SettingKind::Int: return s.int_or_list ? "integer, list or text" : "integer";
    case SettingKind::Float: return "number";
    case SettingKind::Text: return s.int_or_list ? "integer, list or text" : "text";
    case SettingKind::TextList: return "list of text";
  }
  return "";
}

std::string code_list(const Setting& s) {
  std::string out;
  for (const std::string& f : s.flag_names()) out += (out.empty() ? "`" : ", `") + f + "`";
  return out;
}

}  // namespace

std::string settings_reference(const RunSchema& schema) {
  std::string out =
      "# Run settings\n\n"
      "Generated from the run schema (src/train/config/run_schema_*.cpp) by `parallm settings`;\n"
      "a unit test holds this file to it. Each setting is a key of a run file's table, a flag of\n"
      "`parallm train`, or both; flags override the file (checkpoint < `--model` < `--config` <\n"
      "`--deepspeed` < flags). \"Recorded\": kept in a checkpoint's run record, so `--load DIR`\n"
      "alone continues the run (the model's shape is recorded as its Hugging Face config.json).\n"
      "Paths in a run file are relative to the file.\n";
  for (const RunTable& t : schema.tables) {
    out += fmt::format("\n## [{}]\n\n| key | flags | value | recorded | help |\n|---|---|---|---|---|\n",
                       t.name);
    for (const Setting& s : schema.settings) {
      if (s.table != t.name || s.hidden) continue;
      std::string help = s.help;
      for (size_t p = help.find('|'); p != std::string::npos; p = help.find('|', p + 2))
        help.replace(p, 1, "\\|");
      out += fmt::format("| {} | {} | {} | {} | {} |\n", s.key.empty() ? "" : "`" + s.key + "`",
                         code_list(s), value_kind(s), s.recorded ? "yes" : "no", help);
    }
  }
  out +=
      "\n## `parallm generate` and `parallm serve`\n\n"
      "Flags both commands take, declared once (src/train/config/inference_flags.cpp).\n\n"
      "| flag | value | help |\n|---|---|---|\n";
  for (const InferenceFlag& f : inference_flags())
    out += fmt::format("| `{}` | {} | {} |\n", f.flag, f.value, f.help);
  out +=
      "\n## Speculative decoding: `parallm generate` and `parallm serve`\n\n"
      "Declared once (src/train/config/speculative_flags.cpp); docs/inference.md.\n\n"
      "| flag | value | help |\n|---|---|---|\n";
  for (const InferenceFlag& f : speculative_flags())
    out += fmt::format("| `{}` | {} | {} |\n", f.flag, f.value, f.help);
  out +=
      "\n## Many LoRA adapters: `parallm serve`\n\n"
      "Declared once (src/train/config/lora_serving_flags.cpp); docs/serving.md.\n\n"
      "| flag | value | help |\n|---|---|---|\n";
  for (const InferenceFlag& f : lora_serving_flags())
    out += fmt::format("| `{}` | {} | {} |\n", f.flag, f.value, f.help);
  return out;
}

}  // namespace parallm
