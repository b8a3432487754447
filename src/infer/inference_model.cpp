// InferenceModel loading (see inference_model.h).
#include "infer/inference_model.h"

#include <utility>

#include "data/byte_tokenizer.h"
#include "infer/eos_ids.h"
#include "infer/huge_pages.h"
#include "infer/quantize_weights.h"
#include "io/gguf/gguf_config.h"
#include "io/gguf/gguf_tokenizer.h"
#include "io/gguf/gguf_weights.h"
#include "io/hf_model.h"
#include "parallel/pipeline/stage_partition.h"
#include "checkpoint/checkpoint_load.h"
#include "nn/recompute.h"

namespace parallm {

namespace {
// The layers of stage pp_rank of pp, split as training splits them.
ModelStage generation_stage(const ModelConfig& cfg, int pp_rank, int pp) {
  ModelStage s;
  if (pp == 1) return s;
  const pipeline::StagePartition p =
      pipeline::partition_layers(static_cast<int>(cfg.n_layers), pp, 1);
  const pipeline::ChunkLayers& cl = p.at(pp_rank, 0);
  s.embedding = cl.has_embedding;
  s.head = cl.has_head;
  s.chunks.push_back({cl.first_layer, cl.num_layers});
  return s;
}
}  // namespace

void select_gguf(ModelSource& s) {
  if (is_gguf_path(s.hf_dir)) s.gguf = std::exchange(s.hf_dir, "");
}

InferenceModel::Placement inference_placement(const RankGrid& grid, const RankGroups& groups,
                                              int rank, MemoryResource& memory) {
  const TpGroup tp{.comm = grid.sizes().tp > 1 ? groups.tp.get() : nullptr,
                   .on = &ops::Stream::of(memory)};
  return {.tp = tp, .pp_rank = grid.coord(rank).pp_rank, .pp = grid.sizes().pp, .memory = &memory};
}

InferenceModel::InferenceModel(const ModelSource& src, const Placement& where, Precision precision,
                               comm::Communicator* world)
    : alloc_(where.memory != nullptr ? std::make_unique<Allocator>(*where.memory)
                                     : std::make_unique<Allocator>()) {
  PX_CHECK(src.hf_dir.empty() + src.checkpoint.empty() + src.gguf.empty() == 2,
           "give exactly one of a model directory, a GGUF file and a checkpoint");
  if (!src.gguf.empty()) {
    // The whole header and every tensor's extent are checked at open, and
    // every tensor's name, shape and type before the first copy.
    const GgufFile file = GgufFile::open(src.gguf);
    const ModelConfig cfg = gguf_model_config(file);
    model_ = std::make_unique<Transformer>(cfg, *alloc_, where.tp,
                                           generation_stage(cfg, where.pp_rank, where.pp));
    // Inference takes no gradients, and quantised weights need a frozen set.
    model_->base_params().freeze();
    load_gguf_weights(file, *model_);
    eos_ = gguf_eos_ids(file);
  } else if (!src.hf_dir.empty()) {
    const ModelConfig cfg = read_hf_model_config(src.hf_dir);
    model_ = std::make_unique<Transformer>(cfg, *alloc_, where.tp,
                                           generation_stage(cfg, where.pp_rank, where.pp));
    load_hf_weights(src.hf_dir, *model_);
    // config.json's ids in the vocabulary (generation_eos_ids warns of the others).
    eos_ = eos_ids_in_vocab(config_eos_ids(src), cfg.vocab_size, nullptr);
  } else {
    const OpenedCheckpoint ck = open_checkpoint(src.checkpoint, world);
    PX_CHECK(!ck.state.model.lora.enabled(),
             "{} holds LoRA adapters only: merge them first (parallm export --merge-lora "
             "--checkpoint {} --out DIR) and serve DIR",
             ck.dir, src.checkpoint);
    model_ =
        std::make_unique<Transformer>(ck.state.model, *alloc_, where.tp,
                                      generation_stage(ck.state.model, where.pp_rank, where.pp));
    model_->params().init_random(0);  // every element is overwritten below
    check_checkpoint_covers_model(ck, model_->params(), ck.state.model);
    load_checkpoint_values(ck, model_->params(), ck.state.model.vocab_size);
    restore_expert_bias(*model_, ck.state);
    if (ck.state.model.vocab_size > ByteTokenizer::kEndOfText) eos_ = {ByteTokenizer::kEndOfText};
  }
  if (!src.quantize.empty()) {
    PX_CHECK(!model_->base_params().any_quant(),
             "--quantize {}: {} is already quantised (its tensors keep the file's types)",
             src.quantize, src.gguf);
    PX_CHECK(alloc_->device() == Device::CPU,
             "--quantize runs on the CPU only: the {} device has no quantised kernels",
             device_name(alloc_->device()));
    quantize_weights(*model_, src.quantize);
  }
  if (precision != Precision::FP32) {
    matmul_ = std::make_unique<MatmulPrecision>(precision, model_->base_params(), *alloc_);
    model_->set_compute(matmul_.get(), Recompute::None);
  }
  use_huge_pages();
}

void InferenceModel::use_huge_pages() {
  // Decode reads every weight once per token (huge_pages.h): the f32 values
  // (fp32 GEMMs, embeddings, norms) and, under bf16/fp16, the 16-bit copies
  // the GEMMs read, made here rather than at the first forward so that
  // their pages exist to be collapsed.
  if (alloc_->device() != Device::CPU) return;  // device memory has no host pages
  const ParameterSet& ps = model_->base_params();
  const Tensor& flat = ps.flat_values();
  if (flat.defined()) collapse_to_huge_pages(flat.raw(), flat.nbytes());
  if (!matmul_) return;
  const uint16_t *lo = nullptr, *hi = nullptr;
  for (int i = 0; i < ps.size(); ++i) {
    if (ps.quantized(i)) continue;  // no 16-bit copy
    const uint16_t* w = matmul_->weight(ps, ParamRef{i});
    if (lo == nullptr || w < lo) lo = w;
    if (hi == nullptr || w + ps.numel(i) > hi) hi = w + ps.numel(i);
  }
  if (lo != nullptr) collapse_to_huge_pages(lo, static_cast<size_t>(hi - lo) * sizeof(uint16_t));
}

InferenceModel::~InferenceModel() {
  model_.reset();  // before the allocator and the precision copy it may use
  matmul_.reset();
}

}  // namespace parallm
