# Checkpoint tests (label dist). checkpoint_dist_tests runs whole training
# jobs on the first N of 4 ranks: bit-exact resume per layout, reshard
# between layouts, HF round trip from tp 2. checkpoint_faults.sh kills a rank
# during a save and corrupts checkpoints; hf_python_check.sh reads an export
# with the Python `safetensors` package (scripts/install-deps.sh installs it;
# its absence fails the test).
file(GLOB PARALLM_CKPT_DIST_SOURCES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/*_dist.cpp)
add_executable(checkpoint_dist_tests ${CMAKE_CURRENT_LIST_DIR}/checkpoint_dist_main.cpp
                                     ${PARALLM_CKPT_DIST_SOURCES})
target_link_libraries(checkpoint_dist_tests PRIVATE parallm_core GTest::gtest)
add_executable(checkpoint_fault_job ${CMAKE_CURRENT_LIST_DIR}/checkpoint_fault_job.cpp)
target_link_libraries(checkpoint_fault_job PRIVATE parallm_core)

set(PARALLM_CKPT_MPIRUN mpirun --oversubscribe --bind-to none --mca btl self,vader
    --mca mpi_yield_when_idle 1)
set(PARALLM_CKPT_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1)
add_test(NAME checkpoint.dist.np4
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_CKPT_ENV}
                 ${PARALLM_CKPT_MPIRUN} -np 4 $<TARGET_FILE:checkpoint_dist_tests>)
set_tests_properties(checkpoint.dist.np4 PROPERTIES LABELS dist TIMEOUT 600)
add_test(NAME checkpoint.faults
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_CKPT_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/checkpoint_faults.sh $<TARGET_FILE:parallm>
                 $<TARGET_FILE:checkpoint_fault_job> ${CMAKE_SOURCE_DIR}/tests/comm/expect_job_failure.sh)
set_tests_properties(checkpoint.faults PROPERTIES LABELS dist TIMEOUT 300)
add_test(NAME checkpoint.hf_python
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_CKPT_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/hf_python_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(checkpoint.hf_python PROPERTIES LABELS dist TIMEOUT 300)
