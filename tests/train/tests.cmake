# Script tests of the training job's outputs (unit tests in this folder join
# parallm_tests through tests/CMakeLists.txt). tensorboard: TensorBoard's own
# reader sees every metrics scalar at every step, across a resume.
add_test(NAME train.tensorboard
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/tensorboard_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(train.tensorboard PROPERTIES LABELS dist TIMEOUT 300)
# deepspeed: seed 003's DeepSpeed JSON trains exactly as the equivalent flags.
add_test(NAME train.deepspeed
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/deepspeed_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(train.deepspeed PROPERTIES LABELS dist TIMEOUT 300)
# mfu_guard: MFU/HFU <= 100% with a far too low peak and with a disturbed
# start-up measurement; the per-machine cache keeps the best peak.
add_test(NAME train.mfu_guard
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/mfu_guard_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(train.mfu_guard PROPERTIES LABELS dist TIMEOUT 300)
# test_device_layouts: `--device test` follows `--device cpu` bit for bit
# under every layout it runs so far (docs/devices.md).
add_test(NAME train.test_device_layouts
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/test_device_layouts.sh $<TARGET_FILE:parallm>)
set_tests_properties(train.test_device_layouts PROPERTIES LABELS dist TIMEOUT 600)

# dp inferred from the world (ParallelismConfig::infer_dp): -np 4 --tp 2 and
# -np 2 --ep 2 run as --dp 2 does, bit for bit.
add_test(NAME train.dp_inferred
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/dp_inferred.sh $<TARGET_FILE:parallm>)
set_tests_properties(train.dp_inferred PROPERTIES LABELS dist TIMEOUT 300)

# straggler: 2 ranks, a planted slow rank named for compute and the rank
# waiting for it not named; a run without one names nobody (docs/resilience.md).
# Serial: its verdicts are timings, which a test beside it on 2 cores would turn.
add_test(NAME train.straggler
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/straggler_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(train.straggler PROPERTIES LABELS dist TIMEOUT 300 RUN_SERIAL TRUE)
