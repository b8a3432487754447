#include "comm/mpi/mpi_pending.h"

#include <fmt/format.h>

#include "base/error.h"
#include "comm/mpi/mpi_types.h"

namespace parallm::comm {

std::string OpLabel::str() const {
  const std::string_view op = op_kind_name(kind);
  if (kind == OpKind::Send)
    return fmt::format("{} #{} to rank {} (tag {}) on {}", op, seq, peer, tag, *group);
  if (kind == OpKind::Recv)
    return fmt::format("{} #{} from rank {} (tag {}) on {}", op, seq, peer, tag, *group);
  return fmt::format("{} #{} on {}", op, seq, *group);
}

void check_recv_count(const MPI_Status& st, MPI_Datatype type, size_t expected,
                      const OpLabel& label) {
  int got = 0;
  MPI_Get_count(&st, type, &got);
  PX_CHECK(static_cast<size_t>(got) == expected, "{}: expected {} elements, the sender sent {}",
           label.str(), expected, got);
}

MpiRequestWork::MpiRequestWork(MpiPlan plan, OpLabel label, std::chrono::milliseconds timeout)
    : plan_(std::move(plan)), label_(std::move(label)), timeout_(timeout) {
  const int rc = invoke(plan_.call, &req_, nullptr);
  mpi_check(rc, mpi_call_name(plan_.call.kind, true), label_.str());
}

bool MpiRequestWork::poll() {
  int flag = 0;
  MPI_Status st;
  const int rc = MPI_Test(&req_, &flag, &st);
  mpi_check(rc, "MPI_Test", label_.str());
  if (flag == 0) return false;
  if (plan_.call.kind == OpKind::Recv)
    check_recv_count(st, plan_.call.type, plan_.expect_recv, label_);
  return true;
}

}  // namespace parallm::comm
