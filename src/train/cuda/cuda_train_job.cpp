// run_cuda_train_job (cuda_train_job.h): checks -> host model and its
// initial weights (seed or --init-from) -> CudaTransformer -> the step loop
// (micro-batches of the global batch in the loader's global order, loss
// normalised by the global token count, clip, optimizer, lr schedule) ->
// progress and metrics -> --save-hf.
#include "train/cuda/cuda_train_job.h"

#include <fmt/ostream.h>

#include <chrono>
#include <iostream>

#include "data/data_loader.h"
#include "io/hf_model.h"
#include "kernels/cuda/caching_device_memory.h"
#include "kernels/cuda/device.h"
#include "model/cuda/cuda_transformer.h"
#include "model/transformer.h"
#include "plan/flops.h"
#include "train/metrics.h"
#include "train/progress_log.h"
#include "train/trainer.h"

namespace parallm {
namespace {

// Everything the GPU path cannot run yet, named before any allocation.
void check_supported(const RunConfig& rc, const LaunchEnv& env) {
  const TrainConfig& t = rc.train;
  const ParallelismConfig& p = t.parallelism;
  PX_CHECK(env.world_size == 1,
           "--device cuda runs one process so far (the job has {} ranks); multi-GPU layouts "
           "over NCCL are not wired into the trainer yet",
           env.world_size);
  PX_CHECK(p.world_size() == 1 && p.ep == 1,
           "--device cuda: dp {}, tp {}, pp {}, cp {}, ep {}: only one-process training so far",
           p.dp.dp, p.tp, p.pp, p.cp, p.ep);
  PX_CHECK(t.precision.matmul != Precision::FP16,
           "--device cuda: --precision fp16 is not on the GPU yet (fp32 or bf16)");
  PX_CHECK(t.training.recompute == Recompute::None,
           "--device cuda: --recompute {} is not on the GPU yet",
           recompute_name(t.training.recompute));
  PX_CHECK(t.checkpoint.save_dir.empty() && resume_source(t.checkpoint).empty(),
           "--device cuda: checkpoints (--save / --load) are not on the GPU yet; --save-hf is");
  PX_CHECK(!t.data.docs.any(), "--device cuda: packed documents are not on the GPU yet");
  PX_CHECK(t.data.val.empty(), "--device cuda: validation data is not on the GPU yet");
}

// MFU's denominator: --peak-tflops, else the datasheet's dense peak of a
// known card (H100/H200 SXM: 989.4 bf16, 66.9 fp32 TFLOP/s); 0 (no MFU) for others.
double peak_flops(const TrainConfig& t, const std::string& device) {
  if (t.logging.peak_tflops > 0) return t.logging.peak_tflops * 1e12;
  const bool hopper =
      device.find("H100") != std::string::npos || device.find("H200") != std::string::npos;
  if (!hopper) return 0.0;
  return t.precision.matmul == Precision::BF16 ? 989.4e12 : 66.9e12;
}

}  // namespace

double run_cuda_train_job(const TrainJobOptions& opts, const LaunchEnv& env, std::ostream& log) {
  const RunConfig& rc = opts.run;
  const TrainConfig& t = rc.train;
  check_supported(rc, env);
  ModelConfig mc =
      t.checkpoint.init_from.empty() ? rc.model : read_hf_model_config(t.checkpoint.init_from);
  PX_CHECK(!mc.gemma(),
           "--device cuda: the Gemma family (GeGLU, sqrt(hidden) embedding scale, (1 + w) "
           "RMSNorm) is not on the GPU yet; train it on the CPU");
  PX_CHECK(mc.rope_scaling.type == RopeScalingType::None,
           "--device cuda: rope_scaling '{}' is not on the GPU yet (its rope kernel takes "
           "rope_theta only); train this model on the CPU",
           rope_scaling_name(mc.rope_scaling.type));
  PX_CHECK(mc.sliding_window == 0 || mc.sliding_window >= t.training.seq_len,
           "--device cuda: sliding-window attention (window {} < sequence length {}) is not on "
           "the GPU yet; train it on the CPU",
           mc.sliding_window, t.training.seq_len);
  const int dev = cuda::select_device(env.local_rank);
  const std::string device = cuda::device_name(dev);

  Allocator host_alloc;
  Transformer host(mc, host_alloc);
  if (t.checkpoint.init_from.empty())
    host.params().init_random(t.training.seed);
  else
    load_hf_weights(t.checkpoint.init_from, host);
  DataLoader data(t.data.train, t.training.seq_len, t.training.seed, t.data.shuffle);
  data.validate_vocab(mc.vocab_size);

  cuda::CachingDeviceMemory memory;
  Allocator gpu_alloc(memory);
  const int64_t B = t.training.micro_batch_size, T = t.training.seq_len;
  const int64_t GB = t.training.global_batch_size, accum = t.grad_accum_steps();
  const bool bf16 = t.precision.matmul == Precision::BF16;
  CudaTransformer model(mc, host.params(), gpu_alloc,
                        bf16 ? CudaPrecision::BF16 : CudaPrecision::F32, B, T,
                        t.precision.allow_tf32);
  const double peak = peak_flops(t, device);
  const double flops_per_token = training_flops_per_token(mc, T);
  fmt::print(
      log,
      "parallm train on {} (cuda:{}): {} {} layers, {} parameters; {}; batch {} x {}"
      " tokens ({} micro-batches of {}); peak {:.1f} TFLOP/s\n",
      device, dev, arch_name(mc.arch), mc.n_layers, host.params().total_numel(),
      bf16 ? "bf16 (fp32 master weights)" : (t.precision.allow_tf32 ? "fp32 (TF32)" : "fp32"), GB,
      T, accum, B, peak / 1e12);

  MetricsWriter metrics =
      t.logging.metrics_path.empty() ? MetricsWriter{} : MetricsWriter(t.logging.metrics_path);
  ProgressLog progress(log, env.stderr_is_tty && &log == &std::cerr, t);
  const LrSchedule sched = t.schedule();
  std::vector<int32_t> in(static_cast<size_t>(B * T)), tg(in.size());
  const double tokens = static_cast<double>(GB * T);
  for (int64_t step = 0; step < t.training.steps; ++step) {
    const auto t0 = std::chrono::steady_clock::now();
    gpu_alloc.reset_peaks();
    model.zero_grads();
    double loss_sum = 0.0;
    for (int64_t m = 0; m < accum; ++m) {
      data.fill_batch(step * GB + m * B, B, in.data(), tg.data());
      loss_sum += model.forward_backward(in.data(), tg.data(), B, 1.0 / tokens);
    }
    StepStats s;
    s.step = step;
    s.lr = sched.at(step);
    s.loss = loss_sum / tokens;
    PX_CHECK(std::isfinite(s.loss), "step {}: the loss is {} (--device cuda stops on NaN)", step,
             s.loss);
    s.grad_norm = model.clip_grad_norm(t.training.clip_grad);
    model.optimizer_step(t.optimizer, s.lr, step + 1);
    PX_CHECK(cudaStreamSynchronize(model.stream()) == cudaSuccess, "step {}: the GPU failed", step);
    s.step_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    s.tokens_per_s = tokens / s.step_seconds;
    s.tflops = s.tokens_per_s * flops_per_token / 1e12;
    s.peak_flops = peak;
    s.mfu = s.hfu = peak > 0 ? s.tflops * 1e12 / peak : 0.0;
    nlohmann::json rec = step_record(s);
    rec.update({{"device", device}, {"memory", memory_json(gpu_alloc.stats())}});
    metrics.write(rec);
    progress.on_step(s);
  }
  fmt::print(log, "done: loss {:.4f} -> {:.4f}\n", progress.first_loss(), progress.last_loss());
  const std::string& hf = t.checkpoint.save_hf_dir;
  if (!hf.empty()) {
    model.copy_values_to(host.params());
    save_hf_model(hf, host, *dtype_from_name(opts.save_dtype));
    fmt::print(log, "saved Hugging Face model to {}\n", hf);
  }
  return progress.last_loss();
}

}  // namespace parallm
