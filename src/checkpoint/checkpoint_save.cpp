// Distributed checkpoint saving (see checkpoint_save.h).
#include "checkpoint/checkpoint_save.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/checkpoint/checkpoint_dir.h"
#include "io/checkpoint/manifest.h"
#include "io/checkpoint/shard_file.h"
#include "ops/copy.h"

namespace fs = std::filesystem;

namespace parallm {
namespace {

std::string shard_file_name(int rank, int size) {
  return fmt::format("shard-{:05d}-of-{:05d}.safetensors", rank, size);
}

// Where a rank leaves its shard's size and digest for rank 0.
std::string digest_path(const std::string& tmp, int rank) {
  return fmt::format("{}/digest-{:05d}.txt", tmp, rank);
}

void fsync_dir(const fs::path& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

std::vector<CheckpointPiece> checkpoint_pieces(const Transformer& model, DataParallel& dp) {
  const ParameterSet& ps = model.params();
  const int tp_rank = model.tp().rank();
  std::vector<CheckpointPiece> out;
  // Under expert parallelism expert tensors differ between the dp ranks of
  // an ep group: each expert-dp rank 0 writes its experts whole, and the dp
  // ranges below carry only the dense tensors (docs/moe.md).
  enum class Which { All, Dense, Experts };
  const bool ep = model.ep().active();
  // Flat elements [lo, hi) of this rank's parameter vector, element lo at base[0].
  auto add_range = [&](const std::string& kind, int64_t lo, int64_t hi, const float* base,
                       Which which = Which::All) {
    for (int i = 0; i < ps.size(); ++i) {
      const int64_t off = ps.offset(i);
      const int64_t a = std::max(lo, off), b = std::min(hi, off + ps.numel(i));
      const ParamSpec& s = ps.spec(i);
      if ((which == Which::Dense && s.expert) || (which == Which::Experts && !s.expert)) continue;
      // One writer per distinct slice: tp rank 0 for tensors replicated over
      // tp, the first holder of a shard that several tp ranks share.
      // The last pipeline stage's copy of the tied table is the first stage's
      // (same name, same values and moments): that stage writes it.
      // Experts are replicated over tp (their shard_dim is the ep split)
      // unless split over tp as well (tp_dim, expert tensor parallelism).
      const bool tp_split = s.expert ? s.tp_dim >= 0 : s.shard_dim >= 0;
      const bool copy =
          s.pipeline_copy || (!tp_split ? tp_rank != 0 : tp_rank % s.tp_replicas != 0);
      if (b <= a || copy) continue;
      TensorSlice slice = TensorSlice::of_box(s.global_shape, s.shape, s.shard_dim, s.shard_begin,
                                              s.tp_dim, s.tp_begin)
                              .sub_range(a - off, b - off);
      out.push_back({s.name, kind, std::move(slice), base + (a - lo)});
    }
  };
  const ShardLayout& sh = dp.shards();
  const int r = dp.dp_rank();
  // ZeRO-3 under ep holds only its spans: dense ones of its dp shard,
  // expert ones of its expert-dp shard; each rank writes what it holds.
  const auto owned = dp.owned_values();
  const bool write_experts = ep && !owned && dp.edp_rank() == 0;
  if (owned) {
    for (const ValueSpan& v : *owned) add_range("param", v.span.begin, v.span.end, v.values);
  } else {
    add_range("param", sh.begin(r), sh.end(r), dp.shard_values(), ep ? Which::Dense : Which::All);
  }
  if (write_experts)
    add_range("param", 0, ps.total_numel(), ps.flat_values().data<float>(), Which::Experts);
  // The optimizer's named state buffers (none for plain SGD), each mapped to
  // flat elements by its spans (optim/optimizer.h).
  if (Optimizer* opt = dp.optimizer()) {
    int64_t lo = opt->begin(), hi = opt->end();
    // Replicated state (DDP): each dp rank writes its ZeRO range of it.
    const bool replicated = lo == 0 && hi == ps.total_numel() && dp.dp_size() > 1 &&
                            dp.options().mode == DpMode::AllReduce && dp.options().zero == 0;
    if (replicated) {
      lo = sh.begin(r);
      hi = sh.end(r);
    }
    auto add_state = [&](int64_t from, int64_t to, Which which) {
      for (const OptimizerState& st : opt->state()) {
        const float* base = st.tensor->data<float>();
        for (const FlatSpan& sp : st.spans) {
          const int64_t a = std::max(from, sp.begin), b = std::min(to, sp.end);
          if (a < b) add_range(st.name, a, b, base + (a - sp.begin), which);
          base += sp.size();
        }
      }
    };
    add_state(lo, hi, ep ? Which::Dense : Which::All);
    // ZeRO-1/2/3 shard expert state over expert-dp: each rank writes its spans.
    if (write_experts || (ep && !replicated)) add_state(0, ps.total_numel(), Which::Experts);
  }
  return out;
}

PreparedSave prepare_save(const CheckpointSaveOptions& opts, const TrainingState& state,
                          const Transformer& model, DataParallel& dp, comm::Communicator* world,
                          bool copy, CopyArena reuse) {
  PreparedSave p;
  p.host = std::move(reuse);
  p.opts = opts;
  p.state = state;
  p.rank = world ? world->rank() : 0;
  p.size = world ? world->size() : 1;
  p.name = step_dir_name(state.step);
  const fs::path root(opts.dir);
  p.tmp = (root / (p.name + ".tmp")).string();
  if (p.rank == 0) {
    std::error_code ec;
    fs::remove_all(p.tmp, ec);  // left by an interrupted save
    fs::create_directories(p.tmp);
  }
  if (world) world->barrier();
  p.pieces = checkpoint_pieces(model, dp);
  // A device's pieces are written from host copies, and so are a CPU's
  // when the write runs on while training changes the values.
  const ops::Stream& st = model.params().stream();
  if (copy || st.device() != Device::CPU) {
    size_t total = 0;
    for (const CheckpointPiece& piece : p.pieces) total += static_cast<size_t>(piece.slice.numel());
    float* at = p.host.reserve(total);
    for (CheckpointPiece& piece : p.pieces) {
      const size_t n = static_cast<size_t>(piece.slice.numel());
      ops::copy_to_host(st, at, piece.data, n * sizeof(float));
      piece.data = at;
      at += n;
    }
  }
  return p;
}

std::string complete_save(const PreparedSave& p, std::chrono::milliseconds timeout,
                          const std::atomic<bool>* cancel) {
  const fs::path root(p.opts.dir), tmp(p.tmp), final_dir = root / p.name;
  const std::string shard = shard_file_name(p.rank, p.size);
  const WrittenFile mine = write_shard_file((tmp / shard).string(), p.pieces, p.rank);
  if (p.opts.after_shard) p.opts.after_shard(p.rank, (tmp / shard).string());
  // This rank's digest, for rank 0's manifest. A file, not a message: the
  // write may run on a thread of its own while the training thread owns the
  // communicators (checkpoint_writer.h).
  write_file_atomically(digest_path(tmp.string(), p.rank), [&](std::ostream& out) {
    out << mine.bytes << " " << mine.sha256 << "\n";
  });
  if (p.rank != 0) return final_dir.string();

  Manifest m;
  m.step = p.state.step;
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (int r = 0; r < p.size; ++r) {
    const std::string d = digest_path(tmp.string(), r);
    while (!fs::exists(d)) {
      PX_CHECK(cancel == nullptr || !cancel->load(), "checkpoint {}: cancelled", p.name);
      PX_CHECK(std::chrono::steady_clock::now() < deadline,
               "checkpoint {}: rank {} did not write its shard within {} ms", p.name, r,
               timeout.count());
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    ManifestEntry e{shard_file_name(r, p.size), 0, ""};
    std::ifstream(d) >> e.bytes >> e.sha256;
    PX_CHECK(e.sha256.size() == 64, "checkpoint {}: malformed digest file {}", p.name, d);
    m.files.push_back(e);
  }
  for (int r = 0; r < p.size; ++r) fs::remove(digest_path(tmp.string(), r));
  write_file_atomically((tmp / kTrainStateName).string(), [&](std::ostream& out) {
    out << training_state_json(p.state).dump(2) << "\n";
  });
  m.files.push_back(manifest_entry(tmp.string(), kTrainStateName));
  write_manifest(tmp.string(), m);  // last: its presence marks the files complete
  fsync_dir(tmp);
  if (fs::exists(final_dir)) {  // the same step saved again (a rerun): replace it
    fs::path old = root / (p.name + ".old");
    fs::remove_all(old);
    fs::rename(final_dir, old);
    fs::rename(tmp, final_dir);
    fs::remove_all(old);
  } else {
    fs::rename(tmp, final_dir);
  }
  fsync_dir(root);
  write_latest(root.string(), p.name);
  prune_checkpoints(root.string(), p.opts.keep);
  return final_dir.string();
}

std::string save_checkpoint(const CheckpointSaveOptions& opts, const TrainingState& state,
                            const Transformer& model, DataParallel& dp, comm::Communicator* world,
                            std::chrono::milliseconds timeout) {
  const PreparedSave p = prepare_save(opts, state, model, dp, world, false);
  const std::string dir = complete_save(p, timeout, nullptr);
  if (world) world->barrier();
  return dir;
}

}  // namespace parallm
