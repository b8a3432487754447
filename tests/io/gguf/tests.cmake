# GGUF (docs/gguf.md). gguf_dump is parallm's side of the reference checks
# against the `gguf` package (gguf_reference.py says what each case checks):
# block dequantisation and quantisation bit for bit, tiny GPT-2 and LLaMA
# models from .gguf generating as from their HF directories, their
# tokenizers, and a Q8_0 LLaMA's parameters (also split over tp 2).
add_executable(gguf_dump ${CMAKE_CURRENT_LIST_DIR}/gguf_dump.cpp)
target_link_libraries(gguf_dump PRIVATE parallm_core)
foreach(case blocks gpt2 llama llama_q8)
  add_test(NAME reference.gguf.${case}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/gguf_reference.py ${case}
                   gguf_${case} $<TARGET_FILE:gguf_dump> $<TARGET_FILE:parallm>
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(reference.gguf.${case} PROPERTIES LABELS reference TIMEOUT 300)
endforeach()
add_test(NAME reference.gguf.llama_q8.tp2
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/gguf_reference.py llama_q8
                 gguf_llama_q8_tp2 $<TARGET_FILE:gguf_dump> $<TARGET_FILE:parallm>
                 ${PARALLM_MPIRUN} -np 2
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.gguf.llama_q8.tp2 PROPERTIES LABELS "reference;dist" TIMEOUT 300)
# --quantize at load: q8_0 as the file gguf writes; q4_k_m over tp 2 as in one process.
add_test(NAME reference.gguf.quantize
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/gguf_reference.py quantize
                 gguf_quantize $<TARGET_FILE:gguf_dump> $<TARGET_FILE:parallm>
                 ${PARALLM_MPIRUN} -np 2
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.gguf.quantize PROPERTIES LABELS "reference;dist" TIMEOUT 300)
# Bad files: one clear error each (truncated, bad magic, version, Q5_K, architecture).
add_test(NAME cli.gguf.bad_input
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/gguf_bad_input.sh $<TARGET_FILE:parallm> gguf_bad_input
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(cli.gguf.bad_input PROPERTIES LABELS unit TIMEOUT 120)

# `parallm export --gguf` (f32, --quantize q8_0) of a tiny GPT-2 and LLaMA: read by the
# gguf package, tensors as gguf_from_hf.py's converter writes them (f32 bit-equal, Q8_0
# equal to gguf.quants.quantize), greedy tokens from the file as from the HF directory.
add_test(NAME reference.gguf.export
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/gguf_export_check.py
                 gguf_export $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.gguf.export PROPERTIES LABELS reference TIMEOUT 120
                     ENVIRONMENT OMP_NUM_THREADS=1)
