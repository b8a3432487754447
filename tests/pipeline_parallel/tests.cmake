# Pipeline-parallel tests (label dist): one MPI gtest binary run by
# `mpirun --oversubscribe -np N` for N = 2, 4, 8; each run tries every
# layout pp x tp x dp = N (every schedule, several micro-batch counts)
# against the one-process run it computes itself, plus the activation-memory
# and bubble measurements at np 2.
file(GLOB PARALLM_PP_DIST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_dist.cpp)
add_executable(pp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/pp_dist_main.cpp ${PARALLM_PP_DIST_SOURCES})
target_link_libraries(pp_dist_tests PRIVATE parallm_core GTest::gtest)

set(PARALLM_PP_MPIRUN mpirun --oversubscribe --bind-to none --mca btl self,vader
    --mca mpi_yield_when_idle 1)
foreach(np 2 4 8)
  add_test(NAME pipeline_parallel.np${np}
           COMMAND ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
                   ${PARALLM_PP_MPIRUN} -np ${np} $<TARGET_FILE:pp_dist_tests>)
  set_tests_properties(pipeline_parallel.np${np} PROPERTIES LABELS dist TIMEOUT 400)
endforeach()
