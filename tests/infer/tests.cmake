# Inference tests. The unit tests (*_test.cpp here) join parallm_tests
# (parallm_core includes the infer layer). Reference (label reference):
# greedy generation against transformers' generate for a GPT-2, a LLaMA
# with grouped-query attention (also with dynamic NTK rope scaling past its
# context), a Gemma, a Qwen2 (q/k/v biases) and a Mistral (sliding window
# shorter than the sequences), tokens and per-step logits, one process,
# tensor parallel and pipeline parallel over 2 ranks (generate_parity.py says
# how).
add_executable(generate_dump ${CMAKE_CURRENT_LIST_DIR}/generate_dump.cpp)
target_link_libraries(generate_dump PRIVATE parallm_core)
foreach(case gpt2 llama llama_dynamic gemma qwen2 mistral)
  add_test(NAME reference.generate.${case}
           COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                   /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/generate_parity.py ${case}
                   gen_${case} $<TARGET_FILE:generate_dump> $<TARGET_FILE:parallm> tp1
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(reference.generate.${case} PROPERTIES LABELS reference TIMEOUT 300)
  foreach(layout tp2 pp2)
    add_test(NAME reference.generate.${case}.${layout}
             COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                     /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/generate_parity.py ${case}
                     gen_${case}_${layout} $<TARGET_FILE:generate_dump> $<TARGET_FILE:parallm>
                     ${layout} ${PARALLM_MPIRUN} -np 2)
    set_tests_properties(reference.generate.${case}.${layout} PROPERTIES
                         LABELS "reference;dist" TIMEOUT 300
                         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endforeach()
endforeach()

# The CLI refuses a bad sampling value before loading anything, naming it.
add_test(NAME cli.generate.bad_value
         COMMAND $<TARGET_FILE:parallm> generate --model does-not-exist --prompt hi
                 --top-p 1.5)
set_tests_properties(cli.generate.bad_value PROPERTIES LABELS unit
                     PASS_REGULAR_EXPRESSION "error: top_p must be in \\(0, 1\\] \\(1: off\\), got 1.5")

# A grid that does not match the ranks is refused before anything loads.
add_test(NAME cli.generate.bad_grid
         COMMAND $<TARGET_FILE:parallm> generate --model does-not-exist --prompt hi --tp 2)
set_tests_properties(cli.generate.bad_grid PROPERTIES LABELS unit
                     PASS_REGULAR_EXPRESSION "error: --tp \\(2\\) x --pp \\(1\\) must equal the number of ranks \\(1\\)")

# The model directory's own tokenizer.json and chat template (--chat) drive
# the prompt: transformers checks every step over parallm's tokens.
add_test(NAME reference.generate.tokenizer
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/generate_tokenizer_check.py
                 gen_tokenizer $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.generate.tokenizer PROPERTIES LABELS reference TIMEOUT 300)

# Generation and serving on the CPU test device (docs/devices.md) follow the
# cpu bit for bit: generate one process (fp32, bf16 + logprobs), tp 2, pp 2;
# serve one process and pp 2 under concurrent load with preemption.
add_test(NAME infer.test_device_inference
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                 /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/test_device_inference.py
                 test_device_inference $<TARGET_FILE:parallm> ${PARALLM_MPIRUN}
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(infer.test_device_inference PROPERTIES LABELS dist TIMEOUT 240)

# --kv-dtype end to end: generate with an f32, bf16 and f16 KV cache, a bad
# value refused, memory --inference halving the cache's bytes.
add_test(NAME cli.generate.kv_dtype
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/kv_dtype_cli.sh $<TARGET_FILE:parallm>)
set_tests_properties(cli.generate.kv_dtype PROPERTIES LABELS unit TIMEOUT 120
                     ENVIRONMENT OMP_NUM_THREADS=1)

# Speculative decoding flags end to end: --draft-model (the model itself),
# --ngram-draft and --num-speculative-tokens give plain decoding's greedy
# tokens; contradicting flags refused.
add_test(NAME cli.generate.speculative
         COMMAND ${CMAKE_CURRENT_LIST_DIR}/speculative_cli.sh $<TARGET_FILE:parallm>)
set_tests_properties(cli.generate.speculative PROPERTIES LABELS unit TIMEOUT 120
                     ENVIRONMENT OMP_NUM_THREADS=1)
# ... and with a draft model under --tp 2 and --pp 2.
add_test(NAME cli.generate.speculative.dist
         COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV} OMP_NUM_THREADS=1
                 ${CMAKE_CURRENT_LIST_DIR}/speculative_cli.sh $<TARGET_FILE:parallm>
                 ${PARALLM_MPIRUN} -np 2)
set_tests_properties(cli.generate.speculative.dist PROPERTIES LABELS dist TIMEOUT 180)

# An EOS id past the vocabulary (GPT2Config's default 50256 on 600 ids, in
# config.json and generation_config.json) is one warning line and generation
# runs without it, giving transformers' greedy tokens.
add_test(NAME reference.generate.eos_outside_vocab
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/eos_outside_vocab_check.py
                 eos_outside_vocab $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.generate.eos_outside_vocab PROPERTIES LABELS reference TIMEOUT 120
                     ENVIRONMENT OMP_NUM_THREADS=1)

# `parallm perplexity` scores a text as llama-perplexity does (chunks, second
# halves, BOS first when the tokenizer adds one), equal to the same score
# computed with transformers: a tiny GPT-2 from its directory and from GGUF,
# a tiny LLaMA whose tokenizer adds a BOS.
add_test(NAME reference.perplexity
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/perplexity_check.py
                 perplexity $<TARGET_FILE:parallm>
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.perplexity PROPERTIES LABELS reference TIMEOUT 120
                     ENVIRONMENT OMP_NUM_THREADS=1)
