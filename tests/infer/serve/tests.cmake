# `parallm serve`: the unit tests (*_test.cpp here) join parallm_tests; the
# conformance test (label reference) serves a tiny GPT-2 made by
# transformers and drives it with the official openai client and raw HTTP
# (serve_openai_check.py says what it checks).
add_test(NAME reference.serve.openai
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_openai_check.py serve_openai
                 $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.serve.openai PROPERTIES LABELS reference TIMEOUT 180)
