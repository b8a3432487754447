# Data-parallel tests (label dist): one MPI gtest binary run by
# `mpirun --oversubscribe -np N` for N = 1..4; every run computes the
# one-process reference itself and compares each layout against it.
file(GLOB PARALLM_DP_DIST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_dist.cpp)
add_executable(dp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/dp_dist_main.cpp ${PARALLM_DP_DIST_SOURCES})
target_link_libraries(dp_dist_tests PRIVATE parallm_core GTest::gtest)

set(PARALLM_DP_MPIRUN mpirun --oversubscribe --bind-to none --mca btl self,vader
    --mca mpi_yield_when_idle 1)
foreach(np 1 2 3 4)
  add_test(NAME parallel.dp.np${np}
           COMMAND ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
                   ${PARALLM_DP_MPIRUN} -np ${np} $<TARGET_FILE:dp_dist_tests>)
  set_tests_properties(parallel.dp.np${np} PROPERTIES LABELS dist TIMEOUT 240)
endforeach()
