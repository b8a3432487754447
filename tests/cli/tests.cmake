# End-to-end CLI test (label unit): tokenize, train, save, eval, bad inputs.
add_test(NAME cli.end_to_end
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli_end_to_end.sh $<TARGET_FILE:parallm>)
set_tests_properties(cli.end_to_end PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT OMP_NUM_THREADS=1)

# `parallm memory` with --lora-rank/--qlora (docs/qlora.md), label unit.
add_test(NAME cli.memory_lora COMMAND ${CMAKE_CURRENT_LIST_DIR}/memory_lora.sh $<TARGET_FILE:parallm>)
set_tests_properties(cli.memory_lora PROPERTIES LABELS unit TIMEOUT 120)

# `parallm train --device cuda`: refusals and the no-device message (label unit).
add_test(NAME cli.device_cuda COMMAND ${CMAKE_CURRENT_LIST_DIR}/device_cuda.sh $<TARGET_FILE:parallm>)
set_tests_properties(cli.device_cuda PROPERTIES LABELS unit TIMEOUT 120)

# `parallm train --qlora`: flag errors, TOML keys, resume bit-identical (label unit).
add_test(NAME cli.qlora_train COMMAND ${CMAKE_CURRENT_LIST_DIR}/qlora_train.sh $<TARGET_FILE:parallm>)
set_tests_properties(cli.qlora_train PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT OMP_NUM_THREADS=1)
# `parallm calibrate --quick` and `parallm plan --profile` on its output (docs/planner.md).
add_test(NAME cli.calibrate_plan
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/calibrate_plan.sh $<TARGET_FILE:parallm>)
set_tests_properties(cli.calibrate_plan PROPERTIES LABELS dist TIMEOUT 300)
