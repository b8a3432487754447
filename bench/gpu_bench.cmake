# GPU benchmarks (bench/gpu/*.cpp), built only with the CUDA backend; each
# bench/gpu/NAME.cpp becomes parallm_gpu_NAME.
if(PARALLM_HAVE_CUDA)
  file(GLOB PARALLM_GPU_BENCH_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/gpu/*.cpp)
  foreach(src ${PARALLM_GPU_BENCH_SOURCES})
    get_filename_component(name ${src} NAME_WE)
    add_executable(parallm_gpu_${name} ${src})
    target_link_libraries(parallm_gpu_${name} PRIVATE parallm_kernels_cuda)
  endforeach()
endif()
