// DType and ReduceOp to NCCL (nccl_types.h).
#include "comm/nccl/nccl_types.h"

#include "base/error.h"

namespace parallm::comm {

ncclDataType_t nccl_dtype(DType t) {
  switch (t) {
    case DType::F32:
      return ncclFloat32;
    case DType::F64:
      return ncclFloat64;
    case DType::BF16:
      return ncclBfloat16;
    case DType::F16:
      return ncclFloat16;
    case DType::I32:
      return ncclInt32;
    case DType::I64:
      return ncclInt64;
    case DType::U8:
      return ncclUint8;
    case DType::I8:
      return ncclInt8;
    default:
      PX_FAIL("NCCL has no element type for {}", dtype_name(t));
  }
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Avg:
      return ncclAvg;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
  }
  PX_FAIL("unknown reduce op {}", static_cast<int>(op));
}

}  // namespace parallm::comm
