// The pipeline runtime's step: walk the list, post receives, compute,
// start sends, poll sends between actions, wait for all sends at the end.
#include "parallel/pipeline/pipeline_runtime.h"

#include <chrono>
#include <map>
#include <thread>

#include "base/error.h"
#include "parallel/pipeline/sim_timeline.h"

namespace parallm::pipeline {

double now_us() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

PipelineRuntime::PipelineRuntime(StagedModel& model, comm::Communicator* pp, Schedule schedule)
    : model_(model), pp_(pp), schedule_(std::move(schedule)) {
  const ScheduleSpec& s = schedule_.spec;
  PX_CHECK(s.pp == 1 || (pp != nullptr && pp->size() == s.pp),
           "the schedule has {} stages but the pp group has {} ranks", s.pp, pp ? pp->size() : 1);
  stage_ = pp ? pp->rank() : 0;
  PX_CHECK(model.num_chunks() == s.virtual_stages,
           "stage {} holds {} model chunks but the schedule has {} virtual stages", stage_,
           model.num_chunks(), s.virtual_stages);
}

namespace {
// Waits for a transfer by polling with short sleeps, so a waiting stage
// leaves its core to the stages that compute (CPU ranks often share cores),
// then, after 2 s, in Work::wait, which applies the communicator's timeout.
void gentle_wait(comm::Work& w) {
  using namespace std::chrono;
  const auto until = steady_clock::now() + seconds(2);
  while (!w.test() && steady_clock::now() < until) std::this_thread::sleep_for(microseconds(50));
  w.wait();
}

struct Inbox {  // a posted receive
  Tensor buf;
  comm::Work work;
};
}  // namespace

StepRecord PipelineRuntime::run_step(const std::function<StagedModel::StageBatch(int)>& batch) {
  const ScheduleSpec& spec = schedule_.spec;
  const int V = spec.virtual_stages;
  StepRecord rec;
  std::map<std::pair<int, int>, Inbox> acts, grads;  // (micro-batch, chunk) -> receive
  // Hand-overs between this stage's own neighbouring chunks (the turn of
  // DualPipeV's V): (micro-batch, receiving chunk) -> activation or gradient.
  std::map<std::pair<int, int>, Tensor> local_acts, local_grads;
  const Placement place = schedule_placement(spec.kind);
  const int last_vs = spec.pp * V - 1;
  // The chunk of this stage holding virtual stage vs, or -1.
  auto local_chunk = [&](int vs) {
    if (vs < 0 || vs > last_vs) return -1;
    const StageChunk at = place_virtual_stage(place, spec.pp, vs);
    return at.stage == stage_ ? at.chunk : -1;
  };
  auto hand_over = [](std::map<std::pair<int, int>, Tensor>& box, int mb, int chunk, Tensor& t) {
    if (chunk >= 0) box[{mb, chunk}] = std::move(t);
  };
  auto take_local = [](std::map<std::pair<int, int>, Tensor>& box, const Action& a, Tensor& t) {
    auto it = box.find({a.micro_batch, a.chunk});
    if (it == box.end()) return;
    t = std::move(it->second);
    box.erase(it);
  };
  std::vector<std::pair<Tensor, comm::Work>> sends;  // buffers stay alive until sent
  Tensor last_output;  // the most recent compute's output, for the send after it
  StagedModel::StageBatch first = batch(0);
  const int64_t rows = model_.stream_rows(first.B, first.T), C = model_.stream_width();
  auto tag_of = [&](const Action& a, bool grad) {
    return (a.micro_batch * V + a.chunk) * 2 + (grad ? 1 : 0);
  };
  auto record = [&](const Action& a, double t0, double t1) {
    trace::Event e;
    e.rank = stage_;
    e.kind = event_kind(a.kind);
    e.name = format_action(a, V > 1);
    e.start_us = t0;
    e.end_us = t1;
    e.micro_batch = a.micro_batch;
    e.chunk = V > 1 ? a.chunk : -1;
    rec.events.push_back(e);
    if (is_compute(a.kind)) rec.compute_us += t1 - t0;
  };
  // Frees the buffers of completed sends. Each test is an MPI call (which
  // may yield the core under mpi_yield_when_idle), so it runs only where the
  // stage would wait anyway or when several sends are outstanding.
  size_t pending = 0;
  auto poll_sends = [&] {
    pending = 0;
    for (auto& s : sends)
      if (!s.second.done() && !s.second.test())
        ++pending;
      else
        s.first = Tensor();
  };
  // Waits for a posted receive (if any) and records the wait.
  auto take = [&](std::map<std::pair<int, int>, Inbox>& box, const Action& a, ActionKind kind) {
    auto it = box.find({a.micro_batch, a.chunk});
    if (it == box.end()) return Tensor();
    poll_sends();
    const double t0 = now_us();
    gentle_wait(it->second.work);
    Action r = a;
    r.kind = kind;
    record(r, t0, now_us());
    Tensor t = std::move(it->second.buf);
    box.erase(it);
    return t;
  };

  // A bug verify's tests may plant (nn/verify_hooks.h): a chunk skips a
  // micro-batch, answering its backward with a zero gradient.
  const FaultHooks* faults = model_.fault_hooks();
  auto dropped = [&](const Action& a) {
    return faults != nullptr && faults->skip_micro_batch &&
           faults->skip_micro_batch(virtual_stage(spec, stage_, a.chunk), spec.pp * V,
                                    a.micro_batch);
  };
  const std::vector<Action>& list = schedule_.stages[stage_];
  std::vector<bool> posted(list.size(), false);
  auto post = [&](size_t i) {
    const Action& a = list[i];
    if (posted[i] || !is_recv(a.kind)) return;
    posted[i] = true;
    const bool grad = a.kind == ActionKind::RecvGrad;
    // A received activation is held until its backward (tag activation).
    Inbox in{Tensor::zeros(model_.allocator(), {rows, C}, DType::F32,
                           grad ? MemTag::Communication : MemTag::Activation),
             {}};
    in.work = pp_->recv_async(in.buf.data<float>(), static_cast<size_t>(rows * C), DType::F32,
                              a.peer, tag_of(a, grad));
    (grad ? grads : acts)[{a.micro_batch, a.chunk}] = std::move(in);
  };
  for (size_t i = 0; i < list.size(); ++i) {
    const Action& a = list[i];
    if (pending >= 2) poll_sends();
    // Before a compute, post the receives of the next compute: a message can
    // then land while this one runs (the receiver's progress completes it).
    if (is_compute(a.kind))
      for (size_t j = i + 1; j < list.size() && !is_compute(list[j].kind); ++j) post(j);
    const double t0 = now_us();
    switch (a.kind) {
      case ActionKind::RecvActivation:
      case ActionKind::RecvGrad:
        post(i);
        break;
      case ActionKind::SendActivation:
      case ActionKind::SendGrad: {
        PX_CHECK(last_output.defined(), "stage {}: {} has no output to send", stage_,
                 format_action(a, true));
        const bool grad = a.kind == ActionKind::SendGrad;
        comm::Work w = pp_->send_async(last_output.data<float>(), static_cast<size_t>(rows * C),
                                       DType::F32, a.peer, tag_of(a, grad));
        sends.emplace_back(std::move(last_output), std::move(w));
        ++pending;
        last_output = Tensor();
        record(a, t0, now_us());
        break;
      }
      case ActionKind::Forward: {
        Tensor in = take(acts, a, ActionKind::RecvActivation);
        take_local(local_acts, a, in);
        if (dropped(a)) break;
        const double c0 = now_us();
        last_output =
            model_.chunk_forward(a.chunk, a.micro_batch, batch(a.micro_batch), std::move(in));
        record(a, c0, now_us());
        hand_over(local_acts, a.micro_batch,
                  local_chunk(virtual_stage(spec, stage_, a.chunk) + 1), last_output);
        break;
      }
      case ActionKind::Backward:
      case ActionKind::BackwardInput: {
        Tensor dout = take(grads, a, ActionKind::RecvGrad);
        take_local(local_grads, a, dout);
        const int below = local_chunk(virtual_stage(spec, stage_, a.chunk) - 1);
        if (dropped(a)) {
          last_output =
              Tensor::zeros(model_.allocator(), {rows, C}, DType::F32, MemTag::Communication);
          hand_over(local_grads, a.micro_batch, below, last_output);
          break;
        }
        const double c0 = now_us();
        LossSum l;
        last_output = model_.chunk_backward(a.chunk, a.micro_batch, dout,
                                            a.kind == ActionKind::BackwardInput, &l);
        dout = Tensor();
        rec.loss.sum += l.sum;
        rec.loss.count += l.count;
        record(a, c0, now_us());
        hand_over(local_grads, a.micro_batch, below, last_output);
        break;
      }
      case ActionKind::BackwardWeight: {
        if (dropped(a)) break;
        model_.chunk_backward_weights(a.chunk, a.micro_batch);
        record(a, t0, now_us());
        break;
      }
    }
  }
  for (auto& s : sends) gentle_wait(s.second);
  PX_CHECK(acts.empty() && grads.empty(), "stage {}: {} receives were never used", stage_,
           acts.size() + grads.size());
  PX_CHECK(local_acts.empty() && local_grads.empty(), "stage {}: {} hand-overs were never used",
           stage_, local_acts.size() + local_grads.size());
  PX_CHECK(model_.chunks_in_flight() == 0, "stage {}: {} micro-batch chunks still hold state",
           stage_, model_.chunks_in_flight());
  if (!rec.events.empty()) {
    rec.start_us = rec.events.front().start_us;
    rec.end_us = rec.events.back().end_us;
  }
  return rec;
}

LossSum PipelineRuntime::run_forward_only(const std::vector<StagedModel::StageBatch>& batches) {
  const ScheduleSpec& spec = schedule_.spec;
  const int pp = spec.pp, V = spec.virtual_stages, last = pp * V - 1;
  const Placement place = schedule_placement(spec.kind);
  LossSum loss;
  std::vector<std::pair<Tensor, comm::Work>> sends;
  for (size_t m = 0; m < batches.size(); ++m) {
    const StagedModel::StageBatch& b = batches[m];
    const int64_t n = model_.stream_rows(b.B, b.T) * model_.stream_width();
    Tensor handed;  // the previous chunk's output when it lives on this stage
    for (int c = 0; c < V; ++c) {  // in virtual-stage order in both placements
      const int vs = virtual_stage(spec, stage_, c);
      const int tag = (static_cast<int>(m) * V + c) * 2;  // as run_step's activations
      Tensor in = std::move(handed);
      if (vs > 0 && !in.defined()) {
        in = Tensor::zeros(model_.allocator(), {n}, DType::F32, MemTag::Activation);
        comm::Work w = pp_->recv_async(in.data<float>(), static_cast<size_t>(n), DType::F32,
                                       place_virtual_stage(place, pp, vs - 1).stage, tag);
        gentle_wait(w);
      }
      Tensor out = model_.chunk_forward(c, static_cast<int>(m), b, std::move(in));
      if (vs == last) {
        const LossSum l = model_.chunk_loss(c, static_cast<int>(m));
        loss.sum += l.sum;
        loss.count += l.count;
        continue;
      }
      model_.drop_chunk(c, static_cast<int>(m));
      const StageChunk next = place_virtual_stage(place, pp, vs + 1);
      if (next.stage == stage_) {
        handed = std::move(out);
        continue;
      }
      comm::Work w = pp_->send_async(out.data<float>(), static_cast<size_t>(n), DType::F32,
                                     next.stage, (static_cast<int>(m) * V + next.chunk) * 2);
      sends.emplace_back(std::move(out), std::move(w));
    }
  }
  for (auto& s : sends) gentle_wait(s.second);
  return loss;
}

}  // namespace parallm::pipeline
