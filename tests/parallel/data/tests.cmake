# Data-parallel tests (label dist): one MPI gtest binary run at 1..4 ranks;
# every run computes the one-process reference itself and compares each
# layout against it: DDP and the parameter server here, ZeRO-1/2/3 in
# tests/parallel/zero (built into this binary, which computes the references once).
parallm_mpi_test_binary(dp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/dp_dist_main.cpp
                        ${CMAKE_CURRENT_LIST_DIR}/../zero)
foreach(np 1 2 3 4)
  parallm_mpi_test(NAME parallel.dp.np${np} NP ${np} TARGET dp_dist_tests TIMEOUT 240)
endforeach()
