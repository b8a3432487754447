// Mapping of parallm types onto MPI's (datatypes, reduce ops, error codes).
// Internal to the MPI backend: nothing outside src/comm/mpi includes <mpi.h>.
#pragma once
#include "comm/mpi/mpi_include.h"

#include <cstddef>
#include <string>
#include <string_view>

#include "comm/op_spec.h"
#include "tensor/dtype.h"

namespace parallm::comm {

// The MPI datatype that moves elements of t (bf16/f16 move as 16-bit words).
MPI_Datatype mpi_datatype(DType t);
// The MPI op for a reduction done natively or on the fp32 copy; avg is a sum
// followed by a division (comm/staging.h).
MPI_Op mpi_op(ReduceOp op);
// MPI's text for an error code, e.g. "MPI_ERR_TRUNCATE: message truncated".
std::string mpi_error_string(int code);
// Throws Error("<call> failed in <context>: <MPI's message>") unless MPI_SUCCESS.
void mpi_check(int code, const char* call, std::string_view context);
// Element counts and displacements are ints in MPI.
int mpi_count(size_t n, std::string_view context);

}  // namespace parallm::comm
