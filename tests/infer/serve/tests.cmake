# `parallm serve`: the unit tests (*_test.cpp here) join parallm_tests; the
# conformance test (label reference) serves a tiny GPT-2 made by
# transformers and drives it with the official openai client and raw HTTP
# (serve_openai_check.py says what it checks).
add_test(NAME reference.serve.openai
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_openai_check.py serve_openai
                 $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.serve.openai PROPERTIES LABELS reference TIMEOUT 180)

# The CLI says what is missing before loading anything.
add_test(NAME cli.serve.needs_model COMMAND $<TARGET_FILE:parallm> serve --port 0)
set_tests_properties(cli.serve.needs_model PROPERTIES LABELS unit
                     PASS_REGULAR_EXPRESSION "error: give --model HF_DIR [|] FILE.gguf or --checkpoint CKPT_DIR")
add_test(NAME cli.serve.bad_log_file
         COMMAND $<TARGET_FILE:parallm> serve --model does-not-exist --log-file /nonexistent/dir/x.jsonl)
set_tests_properties(cli.serve.bad_log_file PROPERTIES LABELS unit
                     PASS_REGULAR_EXPRESSION "error: cannot open the request log '/nonexistent/dir/x.jsonl' for writing")

# Under load (32 requests at once, a small KV pool, prefix cache on and off;
# one process, tp 2 and pp 2) every request gets exactly its tokens alone,
# and the pool is whole afterwards.
foreach(prefix on off)
  add_test(NAME reference.serve.load.prefix_${prefix}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_load_check.py
                   serve_load_${prefix} $<TARGET_FILE:parallm> tp1 ${prefix}
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(reference.serve.load.prefix_${prefix} PROPERTIES LABELS reference
                       TIMEOUT 240)
endforeach()
foreach(layout tp2 pp2)
  add_test(NAME reference.serve.load.${layout}
           COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                   /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_load_check.py
                   serve_load_${layout} $<TARGET_FILE:parallm> ${layout} on
                   ${PARALLM_MPIRUN} -np 2)
  set_tests_properties(reference.serve.load.${layout} PROPERTIES LABELS "reference;dist"
                       TIMEOUT 240)
endforeach()

# The robustness cases against a server running under AddressSanitizer. Only
# the serving code (src/infer/serve, src/infer/structured, the serve command) is compiled with
# ASan, into parallm_serve_asan; the layers below it link uninstrumented (ASan
# still checks every malloc/free), which keeps the extra build to ~30 files
# instead of an ASan build of the whole project. -O1 -g1: ASan's usual
# trade-off between build time and reports with file:line.
option(PARALLM_SERVE_ASAN "Build parallm_serve_asan and its robustness test" ON)
if(PARALLM_SERVE_ASAN)
  # The structured-output parsers (schema, regex, GBNF) and the mask walk
  # take request text too, so they are instrumented with the server.
  file(GLOB PARALLM_SERVE_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/infer/serve/*.cpp
       ${PROJECT_SOURCE_DIR}/src/infer/structured/*.cpp)
  add_executable(parallm_serve_asan ${CMAKE_CURRENT_LIST_DIR}/serve_asan_main.cpp
                 ${PROJECT_SOURCE_DIR}/src/cli/serve_command.cpp
                 ${PROJECT_SOURCE_DIR}/src/cli/run_command.cpp ${PARALLM_SERVE_SOURCES})
  # These objects define the serve symbols first, so the linker never takes
  # the uninstrumented copies from libparallm_infer.a (a clash would not link).
  target_link_libraries(parallm_serve_asan PRIVATE parallm_infer parallm_device_cuda CLI11::CLI11)
  target_compile_options(parallm_serve_asan PRIVATE -fsanitize=address -fno-omit-frame-pointer
                         -O1 -g1 -Wall -Wextra -Wno-unused-parameter
                         -Wno-missing-field-initializers)
  target_link_options(parallm_serve_asan PRIVATE -fsanitize=address)
  add_test(NAME reference.serve.asan
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_asan_check.py serve_asan
                   $<TARGET_FILE:parallm_serve_asan>
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(reference.serve.asan PROPERTIES LABELS reference TIMEOUT 300)
endif()

# A rank killed (SIGKILL) mid-stream under `mpirun -np 2 parallm serve --tp 2`
# ends the whole job with a message, and the client's stream ends: the
# follower (rank 1) and the leader (rank 0).
foreach(victim 0 1)
  add_test(NAME reference.serve.rank_death.rank${victim}
           COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                   /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_rank_death_check.py
                   serve_rank_death_${victim} $<TARGET_FILE:parallm> ${victim}
                   ${PARALLM_MPIRUN} -np 2)
  set_tests_properties(reference.serve.rank_death.rank${victim} PROPERTIES
                       LABELS "reference;dist" TIMEOUT 180)
endforeach()

# The server's default wait policy (passive) and that a given one stands.
add_test(NAME reference.serve.wait_policy
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_wait_policy_check.py
                 serve_wait_policy $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.serve.wait_policy PROPERTIES LABELS reference TIMEOUT 120)

# A pp 2 server step split into micro-batches in flight gives the logits of
# the whole step (bit for bit for decode steps) and of one process.
parallm_mpi_test_binary(serve_dist_tests ${CMAKE_CURRENT_LIST_DIR}/serve_dist_main.cpp)
parallm_mpi_test(NAME infer.serve.pipeline_step.np2 NP 2 TARGET serve_dist_tests TIMEOUT 240)

# Structured output with the official openai client: 100 seeded random JSON
# schemas (half streamed) each answered with JSON that validates
# (jsonschema), json_object, regex, GBNF and choice constraints, constrained
# and free requests in one batch (the free ones equal to their answers
# alone), a bad schema refused with 400 and the server serving after it.
add_test(NAME reference.serve.structured
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_structured_check.py
                 serve_structured $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.serve.structured PROPERTIES LABELS reference TIMEOUT 180)
# Tool calls with the official openai client: tools with tool_choice
# required / a named function answered as tool_calls whose arguments validate
# (jsonschema), streamed and not, through Qwen2.5's template; auto, a
# follow-up turn with the tool's result, and bad tools refused with 400s
# naming the field while the server keeps serving.
add_test(NAME reference.serve.tools
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_tools_check.py
                 serve_tools $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.serve.tools PROPERTIES LABELS reference TIMEOUT 120)

# Many LoRA adapters with the official openai client: eight peft-made
# adapters and the base in one batch, each answer equal to peft's greedy
# tokens and logprobs, one adapter loaded and unloaded at run time,
# /v1/models with parents, unknown and malformed adapters refused, /metrics
# counting requests per adapter; .ngram: the same with prompt-lookup drafts;
# .gpt2: a GPT-2 with adapters on c_attn (one A for q, k, v), c_proj, c_fc.
add_test(NAME reference.serve.lora
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_lora_check.py
                 serve_lora $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
add_test(NAME reference.serve.lora.ngram
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_lora_check.py
                 serve_lora_ngram $<TARGET_FILE:parallm> --ngram-draft 2
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
add_test(NAME reference.serve.lora.gpt2
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_lora_check.py
                 serve_lora_gpt2 $<TARGET_FILE:parallm> gpt2
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.serve.lora reference.serve.lora.ngram reference.serve.lora.gpt2
                     PROPERTIES LABELS reference TIMEOUT 240)

# Speculative decoding in the server: 16 concurrent greedy requests get the
# plain server's tokens, with prompt-lookup drafts and with a draft model
# (the model itself), and /metrics counts drafts proposed and accepted; one
# process, and under tp 2 / pp 2 (a draft model runs on rank 0 alone).
foreach(draft ngram model)
  add_test(NAME reference.serve.speculative.${draft}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_speculative_check.py
                   serve_speculative_${draft} $<TARGET_FILE:parallm> tp1 ${draft}
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(reference.serve.speculative.${draft} PROPERTIES LABELS reference
                       TIMEOUT 240)
endforeach()
foreach(case "tp2;model" "pp2;ngram")
  list(GET case 0 layout)
  list(GET case 1 draft)
  add_test(NAME reference.serve.speculative.${layout}_${draft}
           COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                   /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/serve_speculative_check.py
                   serve_speculative_${layout} $<TARGET_FILE:parallm> ${layout} ${draft}
                   ${PARALLM_MPIRUN} -np 2)
  set_tests_properties(reference.serve.speculative.${layout}_${draft} PROPERTIES
                       LABELS "reference;dist" TIMEOUT 300)
endforeach()

# LoRA serving under tp is refused on every rank before anything loads.
add_test(NAME infer.serve.lora_tp_refused.np2
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 ${PARALLM_MPIRUN} -np 2 $<TARGET_FILE:parallm> serve --model no_model_needed
                 --tp 2 --port 0 --lora-modules a=no_adapter_needed)
set_tests_properties(infer.serve.lora_tp_refused.np2 PROPERTIES LABELS dist TIMEOUT 60
                     PASS_REGULAR_EXPRESSION
                     "rank 1 of 2: error: LoRA adapters are served by one process only")
