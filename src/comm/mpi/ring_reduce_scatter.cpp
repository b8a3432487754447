#include "comm/mpi/ring_reduce_scatter.h"

#include <cstring>
#include <vector>

namespace parallm::comm {

namespace {

// acc[i] = mine[i] + theirs[i]: own input first, then the partial sum
// received from the left neighbour.
template <class T>
void add_blocks(T* acc, const T* mine, const T* theirs, int n) {
  for (int i = 0; i < n; ++i) acc[i] = mine[i] + theirs[i];
}

// The blocks in flight live in the communicator's scratch, like MPI's own
// internal buffers (not a tagged tensor: the library's, not the model's).
template <class T>
int ring(const T* in, T* out, int count, MPI_Datatype type, MPI_Comm comm, int rank, int size,
         std::vector<std::byte>& scratch) {
  const size_t n = static_cast<size_t>(count);
  if (scratch.size() < 2 * n * sizeof(T)) scratch.resize(2 * n * sizeof(T));
  T* acc = reinterpret_cast<T*>(scratch.data());
  T* got = acc + n;
  const int right = (rank + 1) % size, left = (rank + size - 1) % size;
  const auto block = [&](int b) { return in + static_cast<size_t>(b) * count; };
  for (int k = 0; k + 1 < size; ++k) {
    // Step k sends block (rank - k - 1): the raw input at k = 0, else the
    // partial sum made at step k - 1; it receives block (rank - k - 2).
    const T* send = k == 0 ? block((rank + size - 1) % size) : acc;
    const int rc = MPI_Sendrecv(send, count, type, right, kRingTag, got, count, type, left,
                                kRingTag, comm, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return rc;
    // The last step's sum is this rank's block: it goes straight to `out`.
    // In place, `out` is the input's start, whose blocks are all sent by
    // now except block 0 itself when this is rank 0 (summed element by
    // element into the same place).
    T* dst = k + 2 == size ? out : acc;
    add_blocks(dst, block((rank + 2 * size - k - 2) % size), got, count);
  }
  return MPI_SUCCESS;
}

size_t element_bytes(MPI_Datatype type) { return type == MPI_DOUBLE ? 8 : 4; }

}  // namespace

bool ring_reduce_scatter_serves(MPI_Datatype type, MPI_Op op, int count, int ranks) {
  return op == MPI_SUM && (type == MPI_FLOAT || type == MPI_DOUBLE) &&
         static_cast<size_t>(count) * ranks * element_bytes(type) >= kRingMinBytes;
}

int ring_reduce_scatter(const void* send, void* recv, int count, MPI_Datatype type, MPI_Comm comm,
                        std::vector<std::byte>& scratch) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const void* in = send == MPI_IN_PLACE ? recv : send;
  if (size == 1 || count == 0) {
    const size_t bytes = static_cast<size_t>(count) * element_bytes(type);
    if (in != recv && bytes > 0) std::memcpy(recv, in, bytes);
    return MPI_SUCCESS;
  }
  if (type == MPI_DOUBLE)
    return ring(static_cast<const double*>(in), static_cast<double*>(recv), count, type, comm, rank,
                size, scratch);
  return ring(static_cast<const float*>(in), static_cast<float*>(recv), count, type, comm, rank,
              size, scratch);
}

}  // namespace parallm::comm
