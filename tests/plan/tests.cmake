# The memory model against the allocator (label dist): one MPI gtest binary
# at 1, 2 and 4 ranks, each trying the dp x tp layouts of that size; the
# MoE layouts (moe_memory_dist.cpp) run as their own tests.
parallm_mpi_test_binary(plan_dist_tests ${CMAKE_CURRENT_LIST_DIR}/plan_dist_main.cpp)
foreach(np 1 2 4)
  add_test(NAME plan.memory_model.np${np}
           COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                   ${PARALLM_MPIRUN} -np ${np} $<TARGET_FILE:plan_dist_tests>
                   --gtest_filter=-MoeMemoryModel.*)
  set_tests_properties(plan.memory_model.np${np} PROPERTIES LABELS dist TIMEOUT 400)
  add_test(NAME plan.moe_memory.np${np}
           COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                   ${PARALLM_MPIRUN} -np ${np} $<TARGET_FILE:plan_dist_tests>
                   --gtest_filter=MoeMemoryModel.*)
  set_tests_properties(plan.moe_memory.np${np} PROPERTIES LABELS dist TIMEOUT 300)
endforeach()
