#include "comm/mpi/mpi_check.h"

#include <fmt/format.h>

#include <array>
#include <map>
#include <thread>
#include <vector>

#include "base/error.h"
#include "comm/mpi/mpi_types.h"

namespace parallm::comm {
namespace {

constexpr int kFields = 6;
using Signature = std::array<int64_t, kFields>;

Signature signature_of(const OpSpec& s, uint64_t seq) {
  const bool v = s.kind == OpKind::AllToAllV;  // counts differ by rank; checked pairwise
  return {
      static_cast<int64_t>(s.kind),           static_cast<int64_t>(s.dtype),
      v ? -1 : static_cast<int64_t>(s.count), is_reducing(s.kind) ? static_cast<int64_t>(s.op) : -1,
      is_rooted(s.kind) ? s.root : -1,        static_cast<int64_t>(seq)};
}

std::string describe_signature(const Signature& g) {
  OpSpec s;
  s.kind = static_cast<OpKind>(g[0]);
  s.dtype = static_cast<DType>(g[1]);
  s.count = g[2] < 0 ? 0 : static_cast<size_t>(g[2]);
  if (g[3] >= 0) s.op = static_cast<ReduceOp>(g[3]);
  if (g[4] >= 0) s.root = static_cast<int>(g[4]);
  std::string args = describe_args(s);
  if (s.kind == OpKind::AllToAllV) args = "all_to_all_v(" + std::string(dtype_name(s.dtype)) + ")";
  return fmt::format("{} as #{}", args, g[5]);
}

// Waits for one request under the group's timeout, naming the check.
void wait_check(MPI_Request* req, const OpLabel& label, std::chrono::milliseconds timeout) {
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + timeout;
  for (uint64_t i = 0;; ++i) {
    int flag = 0;
    mpi_check(MPI_Test(req, &flag, MPI_STATUS_IGNORE), "MPI_Test", label.str());
    if (flag != 0) return;
    if (i >= 64) std::this_thread::yield();
    if (i % 16 == 15 && Clock::now() >= deadline) break;
  }
  PX_FAIL(
      "{}: the collective check did not complete within {}: a peer rank may have died, "
      "hung, or not reached this collective",
      label.str(), format_duration(timeout));
}

void check_pair_counts(const OpSpec& s, const OpLabel& label, MPI_Comm comm, int rank, int size,
                       std::chrono::milliseconds timeout) {
  // told[j] = what rank j will send to this rank.
  std::vector<int64_t> mine(s.send_counts.begin(), s.send_counts.end()), told(size);
  MPI_Request req;
  mpi_check(MPI_Ialltoall(mine.data(), 1, MPI_INT64_T, told.data(), 1, MPI_INT64_T, comm, &req),
            "MPI_Ialltoall", label.str());
  wait_check(&req, label, timeout);
  int bad = -1;
  for (int j = 0; j < size && bad < 0; ++j)
    if (told[j] != static_cast<int64_t>(s.recv_counts[j])) bad = j;
  // Everyone must fail together: agree on whether any pair disagreed.
  int any = bad >= 0 ? 1 : 0;
  mpi_check(MPI_Iallreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm, &req), "MPI_Iallreduce",
            label.str());
  wait_check(&req, label, timeout);
  if (bad >= 0)
    PX_FAIL("{}: count mismatch: rank {} sends {} elements to rank {}, which expects {}",
            label.str(), bad, told[bad], rank, s.recv_counts[bad]);
  PX_CHECK(any == 0, "{}: count mismatch between other ranks of the group", label.str());
}

}  // namespace

void check_collective(const OpSpec& s, const OpLabel& label, MPI_Comm comm, int rank, int size,
                      std::chrono::milliseconds timeout) {
  const Signature mine = signature_of(s, label.seq);
  std::vector<Signature> all(size);
  MPI_Request req;
  mpi_check(MPI_Iallgather(mine.data(), kFields, MPI_INT64_T, all.data(), kFields, MPI_INT64_T,
                           comm, &req),
            "MPI_Iallgather", label.str());
  wait_check(&req, label, timeout);
  std::map<Signature, std::vector<int>> calls;  // distinct signature -> ranks
  for (int r = 0; r < size; ++r) calls[all[r]].push_back(r);
  if (calls.size() > 1) {
    std::string who;
    for (const auto& [sig, ranks] : calls)
      who +=
          fmt::format("{}rank{} {} called {}", who.empty() ? "" : "; ", ranks.size() > 1 ? "s" : "",
                      fmt::join(ranks, ","), describe_signature(sig));
    PX_FAIL("collective mismatch at {}: {}", label.str(), who);
  }
  if (s.kind == OpKind::AllToAllV) check_pair_counts(s, label, comm, rank, size, timeout);
}

}  // namespace parallm::comm
