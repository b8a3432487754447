# The memory model against the allocator (label dist): one MPI gtest binary
# at 1, 2 and 4 ranks, each trying the dp x tp layouts of that size.
parallm_mpi_test_binary(plan_dist_tests ${CMAKE_CURRENT_LIST_DIR}/plan_dist_main.cpp)
foreach(np 1 2 4)
  parallm_mpi_test(NAME plan.memory_model.np${np} NP ${np} TARGET plan_dist_tests TIMEOUT 400)
endforeach()
