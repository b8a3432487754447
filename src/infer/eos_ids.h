// The ids that end generation, as `parallm generate` and `parallm serve`
// settle them: the model's (InferenceModel::eos_ids()), an HF directory's
// config.json eos_token_id as written, and the tokenizer's (eos_token,
// generation_config.json's eos_token_id; model_text.h). An id with no row in
// the vocabulary can never be chosen, so it could never end a sequence:
// each such id is dropped with one warning line naming it and the vocabulary
// size, and generation runs without it, as transformers' generate() does
// (GPT2Config's default eos_token_id 50256 on a smaller vocabulary).
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "data/tokenizer/tokenizer.h"
#include "infer/inference_model.h"

namespace parallm {

// config.json's eos_token_id (an id or a list) of an HF directory, every
// integer as written, in or out of the vocabulary; none for other sources.
std::vector<int32_t> config_eos_ids(const ModelSource& source);

// ids without duplicates and without those outside [0, vocab); one line on
// warn (when not null) per id dropped for that.
std::vector<int32_t> eos_ids_in_vocab(const std::vector<int32_t>& ids, int64_t vocab,
                                      std::ostream* warn);

// The job's EOS ids: the model's, config.json's, then the tokenizer in
// dir's (none for the byte tokenizer, dir ""), through eos_ids_in_vocab.
std::vector<int32_t> generation_eos_ids(const ModelSource& source,
                                        const std::vector<int32_t>& model_eos,
                                        const Tokenizer& tok, const std::string& dir,
                                        int64_t vocab, std::ostream* warn);

}  // namespace parallm
