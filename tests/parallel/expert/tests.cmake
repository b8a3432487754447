# Expert-parallel tests (label dist): one MPI gtest binary at 2 and 4 ranks;
# each run trains MoE layouts (ep x edp = dp = ranks) against the one-process
# run it computes itself, and checks the token dispatch on its own.
parallm_mpi_test_binary(ep_dist_tests ${CMAKE_CURRENT_LIST_DIR}/ep_dist_main.cpp)
foreach(np 2 4)
  parallm_mpi_test(NAME parallel.ep.np${np} NP ${np} TARGET ep_dist_tests TIMEOUT 300)
endforeach()
add_test(NAME parallel.ep.checkpoint
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/ep_checkpoint.sh $<TARGET_FILE:parallm>)
set_tests_properties(parallel.ep.checkpoint PROPERTIES LABELS dist TIMEOUT 300)
add_test(NAME parallel.ep.compose
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/ep_compose.sh $<TARGET_FILE:parallm>)
set_tests_properties(parallel.ep.compose PROPERTIES LABELS dist TIMEOUT 300)
