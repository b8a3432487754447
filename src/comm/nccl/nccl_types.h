// NCCL's names for parallm's element types and reductions. Only reductions
// need an NCCL element type (F32, F64, BF16, F16, I32, I64; U8 and I8 too);
// data movement is done on bytes, so every DType moves.
#pragma once
#include <nccl.h>

#include "comm/op_spec.h"

namespace parallm::comm {

// Throws naming the dtype when NCCL has no such type.
ncclDataType_t nccl_dtype(DType t);
ncclRedOp_t nccl_op(ReduceOp op);

}  // namespace parallm::comm
