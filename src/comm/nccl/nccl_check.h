// Error checks for NCCL calls: a failed call throws parallm::Error naming the
// call, the group or operation it served, NCCL's error string and NCCL's own
// last message (ncclGetLastError), which says what exactly went wrong. Two
// ranks on one GPU, which NCCL refuses, get a message saying how to fix it.
#pragma once
#include <nccl.h>

#include <string_view>

namespace parallm::comm {

// Throws unless r is ncclSuccess. comm may be null (before a communicator exists).
void nccl_check(ncclResult_t r, const char* call, ncclComm_t comm, std::string_view context);

}  // namespace parallm::comm
