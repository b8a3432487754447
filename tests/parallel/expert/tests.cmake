# Expert-parallel tests (label dist): one MPI gtest binary at 2 and 4 ranks;
# each run trains MoE layouts (ep x edp = dp = ranks) against the one-process
# run it computes itself, and checks the token dispatch on its own.
# The ZeRO, tensor-parallel and pipeline layouts run as tests of their own
# (the same binary, filtered), so each stays well inside its timeout.
parallm_mpi_test_binary(ep_dist_tests ${CMAKE_CURRENT_LIST_DIR}/ep_dist_main.cpp)
foreach(np 2 4)
  foreach(part "np${np}|-ExpertParallelZero.*:ExpertParallelZero3.*:MoeTensorParallel.*:MoePipeline.*:MoePrecision.*:MoeSigmoidLayout.*"
               "sigmoid.np${np}|MoeSigmoidLayout.*"
               "zero.np${np}|ExpertParallelZero.*" "zero3.np${np}|ExpertParallelZero3.*"
               "tp.gpt2.np${np}|MoeTensorParallel.Gpt2*"
               "tp.llama.np${np}|MoeTensorParallel.Llama*" "pp.np${np}|MoePipeline.*"
               "bf16.np${np}|MoePrecision.*")
    string(REPLACE "|" ";" part "${part}")
    list(GET part 0 name)
    list(GET part 1 filter)
    add_test(NAME parallel.ep.${name}
             COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV} ${PARALLM_MPIRUN} -np ${np}
                     $<TARGET_FILE:ep_dist_tests> --gtest_filter=${filter})
    set_tests_properties(parallel.ep.${name} PROPERTIES LABELS dist TIMEOUT 300)
  endforeach()
endforeach()
# pp 2 x dp 4 x ep 2: the one layout with pp whose expert-dp is above 1.
add_test(NAME parallel.ep.pp.np8
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV} ${PARALLM_MPIRUN} -np 8
                 $<TARGET_FILE:ep_dist_tests> --gtest_filter=MoePipeline.*)
set_tests_properties(parallel.ep.pp.np8 PROPERTIES LABELS dist TIMEOUT 300)
add_test(NAME parallel.ep.checkpoint
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/ep_checkpoint.sh $<TARGET_FILE:parallm>)
set_tests_properties(parallel.ep.checkpoint PROPERTIES LABELS dist TIMEOUT 300)
add_test(NAME parallel.ep.compose
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/ep_compose.sh $<TARGET_FILE:parallm>)
set_tests_properties(parallel.ep.compose PROPERTIES LABELS dist TIMEOUT 300)
add_test(NAME parallel.ep.sigmoid.checkpoint
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/ep_sigmoid_checkpoint.sh $<TARGET_FILE:parallm>)
set_tests_properties(parallel.ep.sigmoid.checkpoint PROPERTIES LABELS dist TIMEOUT 300)
add_test(NAME parallel.ep.zero3.checkpoint
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/ep_zero3_checkpoint.sh $<TARGET_FILE:parallm>)
set_tests_properties(parallel.ep.zero3.checkpoint PROPERTIES LABELS dist TIMEOUT 300)
