# Checkpoint tests (label dist). checkpoint_dist_tests runs whole training
# jobs on the first N of 4 ranks: bit-exact resume per layout, reshard
# between layouts, HF round trip from tp 2. checkpoint_faults.sh kills a rank
# during a save and corrupts checkpoints; hf_python_check.sh reads an export
# with the Python `safetensors` package (scripts/install-deps.sh installs it;
# its absence fails the test).
parallm_mpi_test_binary(checkpoint_dist_tests ${CMAKE_CURRENT_LIST_DIR}/checkpoint_dist_main.cpp)
add_executable(checkpoint_fault_job ${CMAKE_CURRENT_LIST_DIR}/checkpoint_fault_job.cpp)
target_link_libraries(checkpoint_fault_job PRIVATE parallm_core)
parallm_mpi_test(NAME checkpoint.dist.np4 NP 4 TARGET checkpoint_dist_tests TIMEOUT 600)
add_test(NAME checkpoint.faults
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/checkpoint_faults.sh $<TARGET_FILE:parallm>
                 $<TARGET_FILE:checkpoint_fault_job> ${CMAKE_SOURCE_DIR}/tests/comm/expect_job_failure.sh)
set_tests_properties(checkpoint.faults PROPERTIES LABELS dist TIMEOUT 300)
add_test(NAME checkpoint.hf_python
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/hf_python_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(checkpoint.hf_python PROPERTIES LABELS dist TIMEOUT 300)
# resume_load_only.sh: `parallm train --load CKPT` alone continues a
# non-default run bit-exactly from the checkpoint's run record; a flag on
# resume wins; a finished run has nothing to do; an old checkpoint resumes.
add_test(NAME checkpoint.resume_load_only
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/resume_load_only.sh $<TARGET_FILE:parallm>)
set_tests_properties(checkpoint.resume_load_only PROPERTIES LABELS dist TIMEOUT 300)
# snapshot_resume.sh: --snapshot in /dev/shm beside --save on disk; the
# newest complete one is resumed, a snapshot failing its digest gives way.
add_test(NAME checkpoint.snapshot_resume
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/snapshot_resume.sh $<TARGET_FILE:parallm>)
set_tests_properties(checkpoint.snapshot_resume PROPERTIES LABELS dist TIMEOUT 300)
