// The text side of a model that generates: which tokenizer it uses (--tokenizer
// DIR, else the model directory's tokenizer.json, else the byte tokenizer),
// its chat template (tokenizer_config.json's, else the plain one), how a
// conversation becomes token ids, and which ids end generation. Shared by
// `parallm generate` and `parallm serve`, so both encode a prompt alike.
// Invariant: a rendered chat prompt that starts with the BOS is encoded
// without adding another.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "infer/chat/chat_template.h"
#include "infer/inference_model.h"

namespace parallm {

// The directory whose tokenizer (and chat template) a model uses; "" means
// the byte tokenizer, a .gguf path the file's tokenizer.ggml.* and
// tokenizer.chat_template. tokenizer_flag: --tokenizer, "" when not given.
std::string tokenizer_dir(const ModelSource& source, const std::string& tokenizer_flag);

// The tokenizer in dir, or the byte tokenizer when dir is "".
std::unique_ptr<Tokenizer> load_tokenizer_or_bytes(const std::string& dir);

// dir's tokenizer_config.json chat template, else ChatTemplate::plain().
ChatTemplate load_chat_template(const std::string& dir);

// A conversation through the template, with the assistant's turn opened;
// tools_json: the tool list the template renders ("" for none).
std::vector<int32_t> encode_chat(const Tokenizer& tok, const ChatTemplate& tmpl,
                                 const std::vector<ChatMessage>& conversation,
                                 std::string_view tools_json = {});

// The model's EOS ids, then those of dir's tokenizer (none for bytes).
std::vector<int32_t> end_of_sequence_ids(const std::vector<int32_t>& model_eos,
                                         const Tokenizer& tok, const std::string& dir);

// Throws unless every id of tok has a row in the model's vocabulary.
void check_tokenizer_fits(const Tokenizer& tok, const std::string& dir, int64_t model_vocab);

}  // namespace parallm
