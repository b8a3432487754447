#include "comm/mpi/mpi_types.h"

#include <climits>

#include "base/error.h"

namespace parallm::comm {

MPI_Datatype mpi_datatype(DType t) {
  switch (t) {
    case DType::F32:
      return MPI_FLOAT;
    case DType::F64:
      return MPI_DOUBLE;
    case DType::I64:
      return MPI_INT64_T;
    case DType::I32:
      return MPI_INT32_T;
    case DType::I16:
      return MPI_INT16_T;
    case DType::I8:
      return MPI_INT8_T;
    case DType::BF16:
    case DType::F16:
    case DType::U16:
      return MPI_UINT16_T;
    case DType::U8:
    case DType::BOOL:
      return MPI_UINT8_T;
  }
  PX_FAIL("no MPI datatype for dtype {}", static_cast<int>(t));
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg:
      return MPI_SUM;
    case ReduceOp::Max:
      return MPI_MAX;
    case ReduceOp::Min:
      return MPI_MIN;
  }
  PX_FAIL("unknown reduce op {}", static_cast<int>(op));
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", code);
  return std::string(text, static_cast<size_t>(len));
}

void mpi_check(int code, const char* call, std::string_view context) {
  if (code != MPI_SUCCESS) PX_FAIL("{} failed in {}: {}", call, context, mpi_error_string(code));
}

int mpi_count(size_t n, std::string_view context) {
  PX_CHECK(n <= static_cast<size_t>(INT_MAX),
           "{}: {} elements exceed MPI's int count limit ({}); split the buffer", context, n,
           INT_MAX);
  return static_cast<int>(n);
}

}  // namespace parallm::comm
