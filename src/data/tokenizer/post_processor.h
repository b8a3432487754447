// The ids encode(text, add_special_tokens=true) puts before and after the
// text, from tokenizer.json's post_processor: TemplateProcessing's "single"
// template ($A between special tokens, e.g. "<s> $A"), ByteLevel (adds
// nothing), Sequence (applied in order, each around the previous result).
// BertProcessing and RobertaProcessing are refused by name.
// Invariant: only single sequences; a template that names $B is refused.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/tokenizer/json_fields.h"

namespace parallm {

struct SpecialTokenTemplate {
  std::vector<int32_t> prefix;
  std::vector<int32_t> suffix;
};

// Empty template for a JSON null.
SpecialTokenTemplate make_post_processor(const Json& j, const std::string& where);

}  // namespace parallm
