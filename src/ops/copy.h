// Moving bytes on a stream: between the host and the stream's device, and
// within the device. Host code that needs a device buffer's values copies
// them here (a GPU's cudaMemcpy); on the host stream these are memmove /
// memset. copy_to_host is complete on return; the others are queued on the
// stream in order with its ops (complete on return on the host and the test
// device), and a host source may be reused once they return.
#pragma once
#include <cstddef>
#include <cstdint>

#include "ops/stream.h"

namespace parallm::ops {

void copy_to_device(const Stream& s, void* dst, const void* host_src, size_t bytes);
void copy_to_host(const Stream& s, void* host_dst, const void* src, size_t bytes);
// Both on the stream's device (regions may overlap).
void copy(const Stream& s, void* dst, const void* src, size_t bytes);
void zero(const Stream& s, void* dst, size_t bytes);
// n floats set to value.
void fill(const Stream& s, float* dst, int64_t n, float value);
// Returns once every op queued on s is complete (a GPU's queue drains; the
// host and the test device have nothing queued).
void synchronize(const Stream& s);

}  // namespace parallm::ops
