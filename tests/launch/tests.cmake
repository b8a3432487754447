# The supervisor (src/launch): the chaos test restarts a 4-rank job through
# three planted failures and compares its final parameters with an
# uninterrupted run's, bit for bit.
add_test(NAME launch.chaos
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/chaos_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(launch.chaos PROPERTIES LABELS dist TIMEOUT 300)
add_test(NAME launch.supervisor
         COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/supervisor_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(launch.supervisor PROPERTIES LABELS unit TIMEOUT 120)
add_test(NAME launch.elastic
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 bash ${CMAKE_CURRENT_LIST_DIR}/elastic_check.sh $<TARGET_FILE:parallm>)
set_tests_properties(launch.elastic PROPERTIES LABELS dist TIMEOUT 180)
