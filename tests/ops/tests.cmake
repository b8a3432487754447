# The op interface seals the kernels: the layer check fails on a kernel
# header or a cpu:: / cuda:: call above src/ops (label unit).
add_test(NAME ops.kernel_seal_check
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/kernel_seal_check.sh ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
set_tests_properties(ops.kernel_seal_check PROPERTIES LABELS unit TIMEOUT 120)
