// Which GPU this process uses. One GPU per rank: the launcher's local rank
// (OMPI_COMM_WORLD_LOCAL_RANK / SLURM_LOCALID, read by the caller through
// LaunchEnv) modulo the visible devices. device_count() is 0, never an error,
// on a machine with no driver or no device, so CPU-only runs and the gpu
// tests' skip path need no special case.
#pragma once
#include <string>

namespace parallm::cuda {

int device_count();
// Selects device local_rank % device_count(); throws naming both when none is visible.
int select_device(int local_rank);
std::string device_name(int device);
// Streaming multiprocessors and total memory of a device.
int multiprocessor_count(int device);
size_t total_memory(int device);

}  // namespace parallm::cuda
