# NCCL against MPI on a real multi-rank job (label gpu): mpirun -np 2 of
# nccl_vs_mpi, one GPU per rank; it exits 77 (skipped) with fewer GPUs.
if(PARALLM_HAVE_CUDA)
  add_executable(nccl_vs_mpi ${CMAKE_CURRENT_LIST_DIR}/nccl_vs_mpi_main.cpp)
  target_link_libraries(nccl_vs_mpi PRIVATE parallm_core parallm_comm_nccl)
  add_test(NAME gpu.nccl_vs_mpi.np2
           COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                   ${PARALLM_MPIRUN} -np 2 $<TARGET_FILE:nccl_vs_mpi>)
  set_tests_properties(gpu.nccl_vs_mpi.np2 PROPERTIES LABELS gpu TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
