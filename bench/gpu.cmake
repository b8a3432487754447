# GPU benchmarks (bench/gpu/*.cpp, one executable each, named gpu_<file>):
# built with the CUDA backend, run on a lent GPU (scripts/gpu-run.sh).
if(PARALLM_HAVE_CUDA)
  file(GLOB PARALLM_GPU_BENCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/gpu/*.cpp)
  foreach(src ${PARALLM_GPU_BENCH_SOURCES})
    get_filename_component(name ${src} NAME_WE)
    add_executable(gpu_${name} ${src})
    target_link_libraries(gpu_${name} PRIVATE parallm_core parallm_ops_cuda parallm_comm_nccl)
  endforeach()
endif()
