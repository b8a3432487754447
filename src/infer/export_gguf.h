// `parallm export --gguf OUT.gguf`: a Hugging Face directory or a checkpoint
// loaded in f32 on one process (InferenceModel), its tokenizer (model_text's
// choice: the directory's tokenizer.json, or --tokenizer) with the BOS it
// adds and its EOS, written by io/gguf/gguf_export (docs/gguf.md).
#pragma once
#include <string>

#include "infer/inference_model.h"
#include "io/gguf/gguf_export.h"

namespace parallm {

// source.quantize must be empty: the preset is quantize, applied as the
// file is written.
GgufExportReport export_model_gguf(const ModelSource& source, const std::string& tokenizer,
                                   const std::string& quantize, const std::string& path);

}  // namespace parallm
