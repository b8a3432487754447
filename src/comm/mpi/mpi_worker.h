// MpiWorker: the thread that runs a communicator's async collectives, one at
// a time in issue order, as the same blocking MPI calls the blocking API
// uses (PyTorch's ProcessGroupMPI works the same way). Why: MPI forbids a
// nonblocking collective on one rank to match a blocking one on another, and
// Open MPI's nonblocking collectives progress only while polled; a worker
// makes blocking and async calls interchangeable across ranks and lets
// communication overlap compute. Needs MPI_THREAD_MULTIPLE.
#pragma once
#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

#include "comm/mpi/mpi_pending.h"

namespace parallm::comm {

// One queued collective, shared by the worker and the Work that waits on it.
struct MpiTask {
  MpiTask(MpiPlan p, OpLabel l) : plan(std::move(p)), label(std::move(l)) {}
  MpiPlan plan;
  OpLabel label;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;                   // guarded by mu; set after finish (or the error)
  std::atomic<bool> done_flag{false};  // the same, for polling without the lock
  std::exception_ptr error;
  void run() noexcept;  // the blocking MPI call, then the finish step
};

class MpiWorker {
 public:
  MpiWorker();
  ~MpiWorker();  // runs what is queued, then stops
  MpiWorker(const MpiWorker&) = delete;
  MpiWorker& operator=(const MpiWorker&) = delete;

  void enqueue(std::shared_ptr<MpiTask> task);
  // No task queued or running: the caller may use the communicator directly.
  bool idle() const { return pending_.load(std::memory_order_acquire) == 0; }
  // Waits until idle; false if the deadline passed first.
  bool drain_until(std::chrono::steady_clock::time_point deadline);

 private:
  void loop();
  std::mutex mu_;
  std::condition_variable cv_;       // work arrived, or stop
  std::condition_variable idle_cv_;  // pending_ reached 0
  std::deque<std::shared_ptr<MpiTask>> queue_;
  std::atomic<int> pending_{0};  // queued or running
  std::atomic<int> queued_{0};   // queued, for spinning without the lock
  bool stop_ = false;
  std::thread thread_;  // last: starts after the members it uses
};

// The Work side of an MpiTask: sleeps on the task instead of polling.
class MpiTaskWork final : public PendingOp {
 public:
  MpiTaskWork(std::shared_ptr<MpiTask> t, std::chrono::milliseconds timeout)
      : task_(std::move(t)), timeout_(timeout) {}
  bool poll() override;
  bool wait_until(std::chrono::steady_clock::time_point deadline) override;
  std::string describe() const override { return task_->label.str(); }
  std::chrono::milliseconds default_timeout() const override { return timeout_; }

 private:
  bool finished_locked();  // rethrows the task's error
  std::shared_ptr<MpiTask> task_;
  std::chrono::milliseconds timeout_;
};

}  // namespace parallm::comm
