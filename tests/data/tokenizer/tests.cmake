# Tokenizer parity (label reference): compare_tokenizers.py builds four
# tokenizer.json files with Hugging Face tokenizers 0.19.1 (GPT-2 byte-level
# BPE, Llama-3 Split + ByteLevel + ignore_merges, SentencePiece-style Metaspace
# + byte_fallback + "<s> $A", and its Prepend+Replace normalizer form),
# tokenizer_dump encodes the corpus with each, and the script requires
# identical ids, decodes and a correct streaming decode.
add_executable(tokenizer_dump ${CMAKE_CURRENT_LIST_DIR}/tokenizer_dump.cpp)
target_link_libraries(tokenizer_dump PRIVATE parallm_core)
add_test(NAME reference.tokenizers
         COMMAND sh -c "rm -rf ref_tokenizers && /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/compare_tokenizers.py $<TARGET_FILE:tokenizer_dump> ref_tokenizers"
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.tokenizers PROPERTIES LABELS reference TIMEOUT 300)
