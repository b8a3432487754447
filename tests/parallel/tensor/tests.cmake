# Tensor- and sequence-parallel tests (label dist): one MPI gtest binary run
# at 1, 2, 4, 8 ranks; each run tries every layout tp x dp = N (sequence
# parallel on and off) against the one-process run it computes itself, and
# the tp mappings and parallel linears against their definitions.
parallm_mpi_test_binary(tp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/tp_dist_main.cpp)
foreach(np 1 2 4 8)
  parallm_mpi_test(NAME parallel.tp.np${np} NP ${np} TARGET tp_dist_tests TIMEOUT 600)
endforeach()
