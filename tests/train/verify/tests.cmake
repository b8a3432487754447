# `parallm verify` (label dist): correct tp+sp, pp and ZeRO-3 layouts pass;
# planted bugs in each are reported at the right layer and op.
add_test(NAME train.verify
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/verify_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(train.verify PROPERTIES LABELS dist TIMEOUT 300)
