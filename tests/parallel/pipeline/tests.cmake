# Pipeline-parallel tests (label dist): one MPI gtest binary run at 2, 4 and
# 8 ranks; each run tries every layout pp x tp x dp = N (every schedule,
# several micro-batch counts) against the one-process run it computes
# itself, plus the activation-memory and bubble measurements at np 2.
parallm_mpi_test_binary(pp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/pp_dist_main.cpp)
foreach(np 2 4 8)
  parallm_mpi_test(NAME parallel.pp.np${np} NP ${np} TARGET pp_dist_tests TIMEOUT 400)
endforeach()
