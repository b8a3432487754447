# Tensor- and sequence-parallel tests (label dist): one MPI gtest binary run
# by `mpirun --oversubscribe -np N` for N = 1, 2, 4, 8; each run tries every
# layout tp x dp = N (sequence parallel on and off) against the one-process
# run it computes itself.
file(GLOB PARALLM_TP_DIST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_dist.cpp)
add_executable(tp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/tp_dist_main.cpp ${PARALLM_TP_DIST_SOURCES})
target_link_libraries(tp_dist_tests PRIVATE parallm_core GTest::gtest)

set(PARALLM_TP_MPIRUN mpirun --oversubscribe --bind-to none --mca btl self,vader
    --mca mpi_yield_when_idle 1)
foreach(np 1 2 4 8)
  add_test(NAME tensor_parallel.np${np}
           COMMAND ${CMAKE_COMMAND} -E env OMPI_ALLOW_RUN_AS_ROOT=1
                   OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
                   ${PARALLM_TP_MPIRUN} -np ${np} $<TARGET_FILE:tp_dist_tests>)
  set_tests_properties(tensor_parallel.np${np} PROPERTIES LABELS dist TIMEOUT 600)
endforeach()
