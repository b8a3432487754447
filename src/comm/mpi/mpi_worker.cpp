#include "comm/mpi/mpi_worker.h"

#include <thread>

#include "base/error.h"
#include "comm/mpi/mpi_types.h"

namespace parallm::comm {

namespace {
// Before sleeping on a condition variable, a waiter polls this many times
// (yielding the core each time): short collectives then complete without a
// futex wake-up on either side, which would cost ~10 us per call.
constexpr int kSpins = 200;

template <class Pred>
bool spin_until(Pred ready) {
  for (int i = 0; i < kSpins; ++i) {
    if (ready()) return true;
    std::this_thread::yield();
  }
  return ready();
}
}  // namespace

void MpiTask::run() noexcept {
  try {
    const int rc = invoke(plan.call, nullptr, nullptr);
    mpi_check(rc, mpi_call_name(plan.call.kind, false), label.str());
    plan.finish.apply();
  } catch (...) {
    error = std::current_exception();
  }
  std::lock_guard<std::mutex> lock(mu);
  done = true;
  done_flag.store(true, std::memory_order_release);
  cv.notify_all();
}

MpiWorker::MpiWorker() : thread_([this] { loop(); }) {}

MpiWorker::~MpiWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void MpiWorker::enqueue(std::shared_ptr<MpiTask> task) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(task));
    pending_.fetch_add(1, std::memory_order_acq_rel);
    queued_.fetch_add(1, std::memory_order_release);
  }
  cv_.notify_one();
}

bool MpiWorker::drain_until(std::chrono::steady_clock::time_point deadline) {
  std::unique_lock<std::mutex> lock(mu_);
  return idle_cv_.wait_until(lock, deadline, [this] { return idle(); });
}

void MpiWorker::loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (queue_.empty() && !stop_) {
      lock.unlock();
      spin_until([this] { return queued_.load(std::memory_order_acquire) > 0; });
      lock.lock();
    }
    cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (queue_.empty()) return;  // stop_, and everything queued has run
    std::shared_ptr<MpiTask> task = std::move(queue_.front());
    queue_.pop_front();
    queued_.fetch_sub(1, std::memory_order_release);
    lock.unlock();
    task->run();
    task.reset();
    lock.lock();
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) idle_cv_.notify_all();
  }
}

bool MpiTaskWork::finished_locked() {
  if (!task_->done) return false;
  if (task_->error) std::rethrow_exception(task_->error);
  return true;
}

bool MpiTaskWork::poll() {
  std::lock_guard<std::mutex> lock(task_->mu);
  return finished_locked();
}

bool MpiTaskWork::wait_until(std::chrono::steady_clock::time_point deadline) {
  spin_until([this] { return task_->done_flag.load(std::memory_order_acquire); });
  std::unique_lock<std::mutex> lock(task_->mu);
  task_->cv.wait_until(lock, deadline, [this] { return task_->done; });
  return finished_locked();
}

}  // namespace parallm::comm
