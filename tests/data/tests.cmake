# Data script tests (unit tests in this folder join parallm_tests).
# blend_order: a blended Megatron-format run (`--data 0.7 A 0.3 B`) follows
# the same loss trajectory under dp 1 and dp 4 (label dist).
add_test(NAME data.blend_order
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/blend_order_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(data.blend_order PROPERTIES LABELS dist TIMEOUT 300)
