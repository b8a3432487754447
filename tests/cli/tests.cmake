# End-to-end CLI test (label unit): tokenize, train, save, eval, bad inputs.
add_test(NAME cli.end_to_end
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/cli_end_to_end.sh $<TARGET_FILE:parallm>)
set_tests_properties(cli.end_to_end PROPERTIES LABELS unit TIMEOUT 300 ENVIRONMENT OMP_NUM_THREADS=1)
