// Entry of the checkpoint MPI test binary (label dist, 4 ranks): the shared
// helpers of ckpt_env.h and the gtest runner on every rank.
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "ckpt_env.h"
#include "common/mpi_gtest.h"
#include "io/checkpoint/checkpoint_dir.h"
#include "checkpoint/checkpoint_load.h"

namespace fs = std::filesystem;

namespace parallm::ckpt_test {

CkptTestEnv& env() {
  static CkptTestEnv e;
  return e;
}

std::string Layout::name() const {
  std::string s = fmt::format("dp{}_tp{}_zero{}", dp, tp, zero);
  if (ps) s += "_ps";
  if (sp) s += "_sp";
  if (llama) s += "_llama";
  if (optimizer != "adamw") s += "_" + optimizer;
  if (pp > 1) s += fmt::format("_pp{}_{}", pp, schedule);
  if (virtual_stages > 1) s += fmt::format("_v{}", virtual_stages);
  if (layers != 2) s += fmt::format("_L{}", layers);
  if (fp16) s += "_fp16";
  return s;
}

TrainJobOptions job(const Layout& l, const std::string& save, const std::string& metrics) {
  TrainJobOptions o;
  ModelConfig& m = o.run.model;
  m.vocab_size = 1001;
  m.hidden = 32;
  m.n_layers = l.layers;
  m.n_heads = m.n_kv_heads = 4;
  m.head_dim = 8;
  m.intermediate = 64;
  m.max_positions = 32;
  if (l.llama) {
    m.arch = Arch::LLaMA;
    m.n_kv_heads = 2;
    m.tie_embeddings = false;
  }
  TrainConfig& t = o.run.train;
  t.data.train = {env().shard};
  t.training.steps = 20;
  t.training.micro_batch_size = 2;
  t.training.global_batch_size = 8;
  t.training.seq_len = 16;
  t.optimizer.lr = 1e-2;
  t.lr_schedule.warmup = 3;
  t.training.seed = 11;
  m.attn_dropout = 0.1;
  m.hidden_dropout = 0.1;
  t.logging.log_interval = 1000;
  t.logging.peak_tflops = 1;  // no GEMM measurement
  t.logging.metrics_path = metrics;
  t.checkpoint.save_dir = save;
  t.parallelism.dp.dp = l.dp;
  t.parallelism.dp.zero = l.zero;
  t.parallelism.dp.mode = l.ps ? DpMode::ParameterServer : DpMode::AllReduce;
  t.parallelism.dp.bucket_mb = 0.01;
  t.parallelism.tp = l.tp;
  t.parallelism.sequence_parallel = l.sp;
  t.optimizer.kind = optimizer_from_name(l.optimizer);
  if (l.fp16) {
    t.precision.matmul = Precision::FP16;
    t.precision.loss_scale.initial_scale = 1 << 24;
    t.precision.loss_scale.window = 3;
    t.precision.loss_scale.hysteresis = 1;
  }
  t.parallelism.pp = l.pp;
  t.parallelism.schedule = l.schedule;
  t.parallelism.virtual_stages = l.virtual_stages;
  o.threads = 1;
  return o;
}

void run_job(const TrainJobOptions& o, const Layout& l) {
  comm::Communicator* world = env().world;
  const int n = l.ranks();
  auto sub = world->split(world->rank() < n ? 0 : -1, world->rank(), "job");
  if (sub) {
    LaunchEnv le;
    le.rank = sub->rank();
    le.world_size = n;
    std::ostream quiet(nullptr);
    run_train_job(o, le, quiet, n > 1 ? sub.get() : nullptr);
  }
  world->barrier();
}

std::vector<std::pair<int64_t, double>> read_losses(const std::string& metrics) {
  std::vector<std::pair<int64_t, double>> out;
  std::ifstream in(metrics);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line);
    out.emplace_back(j["step"].get<int64_t>(), j["loss"].get<double>());
  }
  return out;
}

std::map<std::string, std::vector<float>> consolidate(const std::string& ckpt, const char* kind) {
  OpenedCheckpoint ck = open_checkpoint(ckpt, nullptr);
  std::map<std::string, std::vector<float>> out;
  for (const auto& name : ck.shards->tensors(kind)) {
    auto shape = ck.shards->global_shape(kind, name);
    TensorSlice whole = TensorSlice::of_box(shape, shape, -1, 0);
    auto& buf = out[name];
    buf.assign(static_cast<size_t>(whole.numel()), 0.0f);
    ck.shards->fill(kind, name, whole, buf.data(), 0);
  }
  return out;
}

const Reference& reference(const Layout& l) {
  static std::map<std::string, Reference> cache;
  auto it = cache.find(l.name());
  if (it != cache.end()) return it->second;
  const std::string dir = env().scratch + "/ref_" + l.name();
  const std::string metrics = dir + ".jsonl";
  run_job(job(l, dir, metrics), l);
  Reference r;
  if (env().world->rank() == 0) r.losses = read_losses(metrics);
  r.checkpoint = dir + "/" + step_dir_name(20);
  return cache[l.name()] = r;
}

}  // namespace parallm::ckpt_test

int main(int argc, char** argv) {
  using namespace parallm;
  ::testing::InitGoogleTest(&argc, argv);
  cpu::set_num_threads(1);
  auto& e = ckpt_test::env();
  return comm::run_mpi_job([&](comm::MpiRuntime& rt) {
    comm::CommOptions opts;
    opts.check_collectives = true;
    opts.timeout = std::chrono::seconds(120);
    auto world = rt.world(opts);
    e.world = world.get();
    // One scratch directory for all ranks, named by rank 0's pid.
    int pid = static_cast<int>(getpid());
    world->broadcast(&pid, 1, DType::I32, 0);
    e.scratch = (fs::temp_directory_path() / fmt::format("parallm_ckpt_{}", pid)).string();
    if (world->rank() == 0) fs::create_directories(e.scratch);
    e.shard = parallm::testing::write_test_shard("ckpt");
    world->barrier();
    int failed = parallm::testing::run_all_tests_on_every_rank(*world);
    fs::remove(e.shard);
    world->barrier();
    if (world->rank() == 0) fs::remove_all(e.scratch);
    e.world = nullptr;
    return failed;
  });
}
