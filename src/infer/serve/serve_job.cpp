// run_serve_job (see serve_job.h).
#include "tensor/dtype.h"
#include "infer/serve/serve_job.h"

#include <fmt/core.h>

#include <csignal>
#include <ctime>
#include <optional>

#include "base/error.h"
#include "infer/draft_model.h"
#include "infer/eos_ids.h"
#include "infer/model_text.h"
#include "infer/serve/engine_factory.h"
#include "infer/serve/metrics.h"
#include "infer/serve/micro_batches.h"
#include "infer/serve/request_log.h"
#include "ops/host_runtime.h"
#include "comm/rank_groups.h"

namespace parallm::serve {
namespace {

// Blocks of the paged cache: --kv-cache-memory bytes on each rank (its
// layers, its share of the kv heads, --kv-dtype's bytes per value), else
// room for max_running sequences of the whole context. The smallest count
// over the ranks, so every rank's pools hold the same block ids.
int64_t kv_cache_blocks(const ServeJobOptions& o, const ModelConfig& cfg, int tp, LayerRange layers,
                        comm::Communicator* world) {
  int64_t blocks = o.max_running * ((cfg.max_positions + o.block_size - 1) / o.block_size);
  if (o.kv_cache_bytes > 0) {
    blocks = PagedKvCache::blocks_for_bytes(cfg, tp, o.block_size, o.kv_cache_bytes, layers,
                                            o.kv_dtype);
    PX_CHECK(blocks >= 1, "--kv-cache-memory ({} bytes) holds no KV block ({} bytes each)",
             o.kv_cache_bytes,
             PagedKvCache::bytes_per_block(cfg, tp, o.block_size, layers, o.kv_dtype));
  }
  if (world && world->size() > 1) {
    int64_t least = 0;
    world->all_reduce(&blocks, &least, 1, DType::I64, comm::ReduceOp::Min);
    blocks = least;
  }
  return blocks;
}

// LoRA adapters are served by one process of the continuous engine: checked
// on every rank before the model loads, so a tp/pp job stops at once.
void check_lora_layout(const ServeJobOptions& o, int ranks) {
  if (!o.lora.enable && o.lora.modules.empty()) return;
  PX_CHECK(ranks == 1,
           "LoRA adapters are served by one process only, not under --tp/--pp ({} ranks): merge "
           "one into the base (parallm export --merge-lora) to serve it on several ranks",
           ranks);
  PX_CHECK(o.engine == "continuous", "LoRA adapters need --engine continuous, got {}", o.engine);
}

// The served LoRA adapters (null: LoRA off), --lora-modules loaded now.
std::unique_ptr<LoraRegistry> lora_registry(const ServeJobOptions& o, Transformer& model,
                                            const std::string& base_name, int ranks) {
  if (!o.lora.enable && o.lora.modules.empty()) return nullptr;
  check_lora_layout(o, ranks);
  auto reg = std::make_unique<LoraRegistry>(model, base_name, o.lora.max_loras,
                                            o.lora.max_lora_rank);
  for (const std::string& item : o.lora.modules) {
    const auto [name, path] = parse_lora_module(item);
    try {
      reg->load(name, path);
    } catch (const LoraRegistryError& e) {
      PX_FAIL("--lora-modules {}: {}", item, e.what());
    }
  }
  return reg;
}

}  // namespace

int run_serve_job(const ServeJobOptions& opts, comm::Communicator* world, ShutdownSignals& signals,
                  std::ostream& out, std::ostream& err, JobDevice* device) {
  std::optional<HostJobDevice> host;
  if (device == nullptr) device = &host.emplace(device_from_name(opts.device), world);
  world = device->world();  // device buffers (hidden rows, logits): NCCL, or staged from the test device
  const int ranks = world ? world->size() : 1, rank = world ? world->rank() : 0;
  PX_CHECK(opts.tp >= 1 && opts.pp >= 1 && opts.tp * opts.pp == ranks,
           "--tp ({}) x --pp ({}) must equal the number of ranks ({})", opts.tp, opts.pp, ranks);
  PX_CHECK(ranks == 1 || opts.engine == "continuous",
           "serving on {} ranks needs --engine continuous, got {}", ranks, opts.engine);
  PX_CHECK(opts.block_size >= 1, "--block-size must be >= 1, got {}", opts.block_size);
  const Precision precision = precision_from_name(opts.dtype);
  PX_CHECK(precision != Precision::FP16, "--dtype must be fp32 or bf16, got {}", opts.dtype);
  PX_CHECK(opts.max_running >= 1, "--max-running must be >= 1, got {}", opts.max_running);
  PX_CHECK(opts.max_waiting >= 1, "--max-waiting must be >= 1, got {}", opts.max_waiting);
  check_lora_layout(opts, ranks);
  // Rank 0 owns HTTP; an unwritable log fails before the model loads.
  RequestLog log(rank == 0 ? opts.log_file : "");

  const std::string dir = tokenizer_dir(opts.source, opts.tokenizer);
  const std::unique_ptr<Tokenizer> tok = load_tokenizer_or_bytes(dir);
  const ChatTemplate chat = load_chat_template(dir);
  ops::set_host_threads(opts.threads);
  const RankGrid grid(GridSizes{.tp = opts.tp, .pp = opts.pp}, ranks);
  const RankGroups groups = split_groups(grid, world, rank);
  InferenceModel im(opts.source, inference_placement(grid, groups, rank, device->memory()),
                    precision, world);
  const TpGroup& tp = im.model().tp();
  const ModelConfig& cfg = im.model().config();
  check_tokenizer_fits(*tok, dir, cfg.vocab_size);
  std::unique_ptr<PagedKvCache> cache;
  std::unique_ptr<StepRunner> runner;
  if (opts.engine == "continuous") {
    const LayerRange layers = im.model().cached_layers();
    cache = std::make_unique<PagedKvCache>(cfg, tp,
                                           kv_cache_blocks(opts, cfg, tp.size(), layers, world),
                                           opts.block_size, im.model().allocator(), layers,
                                           opts.kv_dtype);
    runner = std::make_unique<StepRunner>(im.model(), *cache, world,
                                          opts.pp > 1 ? groups.pp.get() : nullptr,
                                          opts.pp_microbatches > 0 ? opts.pp_microbatches : opts.pp,
                                          opts.pp_microbatches > 0 ? 1 : kMinMicroBatchTokens);
    if (!runner->leader()) {  // rank 0 plans every step; the others run them
      runner->follow();
      return 0;
    }
  }

  const std::string name = !opts.served_model_name.empty() ? opts.served_model_name
                           : !opts.source.hf_dir.empty()   ? opts.source.hf_dir
                           : !opts.source.gguf.empty()     ? opts.source.gguf
                                                           : opts.source.checkpoint;
  const ServedModel model{name,           cfg.max_positions,
                          cfg.vocab_size, tok.get(),
                          &chat,          static_cast<int64_t>(std::time(nullptr))};
  std::unique_ptr<LoraRegistry> loras = lora_registry(opts, im.model(), name, ranks);
  EngineSettings es;
  es.max_running = opts.max_running;
  es.max_waiting = opts.max_waiting;
  es.eos_ids = generation_eos_ids(opts.source, im.eos_ids(), *tok, dir, cfg.vocab_size, &err);
  es.kv_dtype = opts.kv_dtype;
  es.max_batched_tokens = opts.max_batched_tokens;
  es.prefix_cache = opts.prefix_cache;
  es.decode = [&tok](std::span<const int32_t> ids) { return tok->decode_bytes(ids, true); };
  // Once per tokenizer: every id's bytes in a trie, for structured output.
  es.vocab = structured::TokenVocabulary::from_tokenizer(*tok, cfg.vocab_size, es.eos_ids);
  // A draft model runs whole on rank 0 alone: only rank 0 plans steps, and
  // its drafts reach the other ranks as the step's tokens.
  std::optional<InferenceModel> draft_im;
  std::optional<DraftModel> drafter;
  if (opts.draft_model_tokens > 0) {
    PX_CHECK(cache, "speculative decoding needs --engine continuous, got {}", opts.engine);
    PX_CHECK(!opts.draft.hf_dir.empty() || !opts.draft.gguf.empty(),
             "--num-speculative-tokens with a draft model needs --draft-model DIR");
    draft_im.emplace(opts.draft, InferenceModel::Placement{.memory = &device->memory()}, precision,
                     nullptr);
    check_draft_vocab(cfg.vocab_size, draft_im->model().config().vocab_size);
    drafter.emplace(draft_im->model(), cache->num_blocks(), opts.block_size, opts.kv_dtype);
    es.speculative = {.draft = &*drafter, .draft_tokens = opts.draft_model_tokens};
  }
  es.speculative.ngram_tokens = opts.ngram_draft_tokens;
  std::unique_ptr<Engine> engine = make_engine(opts.engine, im.model(), es, runner.get());

  HttpOptions http = opts.http;
  if (http.threads == 0) http.threads = static_cast<int>(opts.max_running + opts.max_waiting + 16);
  ServerMetrics metrics;
  ApiServer server(*engine, model, http, metrics, log, loras.get());
  const int port = server.bind();
  out << fmt::format(
             "parallm serve: listening on http://{}:{} (model '{}', engine {}, tp {}, pp {}, "
             "context {}, max-running {}, max-waiting {}, KV cache {})",
             http.host, port, name, opts.engine, opts.tp, opts.pp, cfg.max_positions,
             opts.max_running, opts.max_waiting,
             cache ? fmt::format("{} blocks of {} tokens, {:.1f} MiB on this rank",
                                 cache->num_blocks(), cache->block_size(),
                                 static_cast<double>(cache->bytes()) / (1 << 20))
                   : std::string("per batch"))
      << std::endl;
  const auto grace = std::chrono::milliseconds(static_cast<int64_t>(opts.shutdown_grace_s * 1000));
  signals.watch([&](int signo) {
    err << fmt::format("parallm serve: {} received, shutting down",
                       signo == SIGINT ? "SIGINT" : "SIGTERM")
        << std::endl;
    server.shutdown(grace);
  });
  server.serve();
  signals.stop();  // waits for a shutdown under way
  engine->shutdown(false);
  err << "parallm serve: stopped" << std::endl;
  return 0;
}

}  // namespace parallm::serve
