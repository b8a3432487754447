# MoE under context parallelism (label dist): its own MPI gtest binary (the
# runner builds cp and ep groups together), run at 2 and 4 ranks; every
# layout against the one-process run it computes itself.
parallm_mpi_test_binary(ep_cp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/ep_cp_main.cpp)
foreach(np 2 4)
  foreach(part "gpt2.np${np}|MoeContextParallel.Gpt2*" "llama.np${np}|MoeContextParallel.Llama*")
    string(REPLACE "|" ";" part "${part}")
    list(GET part 0 name)
    list(GET part 1 filter)
    add_test(NAME parallel.ep.cp.${name}
             COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV} ${PARALLM_MPIRUN} -np ${np}
                     $<TARGET_FILE:ep_cp_dist_tests> --gtest_filter=${filter})
    set_tests_properties(parallel.ep.cp.${name} PROPERTIES LABELS dist TIMEOUT 300)
  endforeach()
endforeach()
add_test(NAME parallel.ep.cp.tp.np4
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV} ${PARALLM_MPIRUN} -np 4
                 $<TARGET_FILE:ep_cp_dist_tests> --gtest_filter=MoeContextParallelTp.*)
set_tests_properties(parallel.ep.cp.tp.np4 PROPERTIES LABELS dist TIMEOUT 300)
# Through the CLI: cp 2 x dp 2 x ep 2 against one process, its checkpoint
# resumed under cp 2 x ep 2 (Ulysses) and on one process.
add_test(NAME parallel.ep.cp.checkpoint
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/ep_cp_checkpoint.sh $<TARGET_FILE:parallm>)
set_tests_properties(parallel.ep.cp.checkpoint PROPERTIES LABELS dist TIMEOUT 300)
