# Data-parallel tests (label dist): one MPI gtest binary run at 1..4 ranks;
# every run computes the one-process reference itself and compares each
# layout (DDP, parameter server, ZeRO-1/2/3) against it.
parallm_mpi_test_binary(dp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/dp_dist_main.cpp)
foreach(np 1 2 3 4)
  parallm_mpi_test(NAME parallel.dp.np${np} NP ${np} TARGET dp_dist_tests TIMEOUT 240)
endforeach()
