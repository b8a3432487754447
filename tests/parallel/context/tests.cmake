# Context-parallel tests (label dist): one MPI gtest binary run at 2 and 4
# ranks; the attention core against full attention, the counted balance,
# and every layout (ring, a2a, hybrid; with tp + sp and dp + ZeRO-2)
# against the one-process run it computes itself.
parallm_mpi_test_binary(cp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/cp_dist_main.cpp)
foreach(np 2 4)
  parallm_mpi_test(NAME parallel.cp.np${np} NP ${np} TARGET cp_dist_tests TIMEOUT 300)
endforeach()
