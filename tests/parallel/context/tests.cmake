# Context-parallel tests (label dist): one MPI gtest binary run at 2 and 4
# ranks (and at 8 for cp 4 composed); the attention core against full attention, the counted balance,
# and every layout (ring, a2a, hybrid; with tp + sp and dp + ZeRO-2)
# against the one-process run it computes itself.
parallm_mpi_test_binary(cp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/cp_dist_main.cpp)
foreach(np 2 4)
  parallm_mpi_test(NAME parallel.cp.np${np} NP ${np} TARGET cp_dist_tests TIMEOUT 300)
endforeach()
# cp 4 composed with tp 2, dp 2 and pp 2: 8 ranks, that test alone.
add_test(NAME parallel.cp.np8
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV} ${PARALLM_MPIRUN} -np 8
                 $<TARGET_FILE:cp_dist_tests> --gtest_filter=ContextParallelLayout.Cp4*)
set_tests_properties(parallel.cp.np8 PROPERTIES LABELS dist TIMEOUT 300)
# Through the CLI with packed documents: cp 2 against one process, the
# --save-hf export, and a checkpoint saved under cp 2 resumed on one process.
add_test(NAME parallel.cp.checkpoint
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/cp_checkpoint.sh $<TARGET_FILE:parallm>)
set_tests_properties(parallel.cp.checkpoint PROPERTIES LABELS dist TIMEOUT 300)
