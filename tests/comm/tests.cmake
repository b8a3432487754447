# MPI tests (label dist): one gtest binary run by `mpirun --oversubscribe -np N`
# for N = 1..8, and fault tests that kill, abort, fail or hang one rank and
# check that the whole job ends non-zero within 30 s with a message.
parallm_mpi_test_binary(comm_dist_tests ${CMAKE_CURRENT_LIST_DIR}/comm_dist_main.cpp)
add_executable(comm_fault_job ${CMAKE_CURRENT_LIST_DIR}/comm_fault_job.cpp)
target_link_libraries(comm_fault_job PRIVATE parallm_core)

foreach(np RANGE 1 8)
  parallm_mpi_test(NAME comm.dist.np${np} NP ${np} TARGET comm_dist_tests TIMEOUT 240)
endforeach()

# mode|ranks|an extended regular expression the job's output must match.
set(PARALLM_COMM_FAULTS
    "kill|4|process rank 1 .*exited on signal 9"
    "abort|3|process rank 1 .*exited on signal 6"
    "error|4|rank 1 of 4: error: injected failure in all_reduce #4"
    "exit|2|Exit code: +3"
    "hang|3|all_reduce #4 on group 'world' \\(rank [02] of 3\\) did not complete within 3 s")
foreach(spec ${PARALLM_COMM_FAULTS})
  string(REPLACE "|" ";" parts "${spec}")
  list(GET parts 0 mode)
  list(GET parts 1 np)
  list(GET parts 2 pattern)
  add_test(NAME comm.fault.${mode}
           COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                   sh ${CMAKE_CURRENT_LIST_DIR}/expect_job_failure.sh 30 "${pattern}"
                   ${PARALLM_MPIRUN} -np ${np} $<TARGET_FILE:comm_fault_job> ${mode})
  set_tests_properties(comm.fault.${mode} PROPERTIES LABELS dist TIMEOUT 90)
endforeach()
