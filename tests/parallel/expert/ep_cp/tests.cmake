# MoE under context parallelism and with experts split over tp (label
# dist): its own MPI gtest binary (the runner builds cp, tp and ep groups
# together), run at 2 and 4 ranks; every layout against the one-process run
# it computes itself.
parallm_mpi_test_binary(ep_cp_dist_tests ${CMAKE_CURRENT_LIST_DIR}/ep_cp_main.cpp)
foreach(np 2 4)
  foreach(part "cp.gpt2.np${np}|MoeContextParallel.Gpt2*" "cp.llama.np${np}|MoeContextParallel.Llama*"
               "etp.gpt2.np${np}|MoeExpertTp.Gpt2*" "etp.llama.np${np}|MoeExpertTp.Llama*")
    string(REPLACE "|" ";" part "${part}")
    list(GET part 0 name)
    list(GET part 1 filter)
    add_test(NAME parallel.ep.${name}
             COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV} ${PARALLM_MPIRUN} -np ${np}
                     $<TARGET_FILE:ep_cp_dist_tests> --gtest_filter=${filter})
    set_tests_properties(parallel.ep.${name} PROPERTIES LABELS dist TIMEOUT 300)
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
# Through the CLI: expert tp 2 saved under tp 2 + sp x dp 2 x ep 2, resumed
# with experts whole (expert tp 1) and on one process; its HF export.
add_test(NAME parallel.ep.etp.checkpoint
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/ep_etp_checkpoint.sh $<TARGET_FILE:parallm>)
set_tests_properties(parallel.ep.etp.checkpoint PROPERTIES LABELS dist TIMEOUT 300)
