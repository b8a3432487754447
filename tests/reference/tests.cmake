# Reference tests (label reference): parallm and Debian's PyTorch run the same
# tiny models from the same safetensors; compare_reference.py holds them to
# 1e-5 (logits, loss, gradients) and 1e-4 (parameters after 5 AdamW steps).
add_executable(reference_dump ${CMAKE_CURRENT_LIST_DIR}/reference_dump.cpp)
target_link_libraries(reference_dump PRIVATE parallm_core)
foreach(arch gpt2 llama)
  add_test(NAME reference.${arch}
           COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                   sh -c "rm -rf ref_${arch} && $<TARGET_FILE:reference_dump> ${arch} ref_${arch} && /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/compare_reference.py ref_${arch}"
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(reference.${arch} PROPERTIES LABELS reference TIMEOUT 300)
endforeach()

# Optimizers (sgd, momentum, nesterov, adam, adamw, muon) against torch.optim and a
# float64 Muon reference over 4 steps of fixed gradients.
add_executable(optimizer_dump ${CMAKE_CURRENT_LIST_DIR}/optimizer_dump.cpp)
target_link_libraries(optimizer_dump PRIVATE parallm_core)
add_test(NAME reference.optimizers
         COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                 sh -c "rm -rf ref_optim && $<TARGET_FILE:optimizer_dump> ref_optim && /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/compare_optimizers.py ref_optim"
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.optimizers PROPERTIES LABELS reference TIMEOUT 300)
