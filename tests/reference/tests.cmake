# Reference tests (label reference): parallm and Debian's PyTorch run the same
# tiny models from the same safetensors; compare_reference.py holds logits,
# loss, gradients and the parameters after 5 AdamW steps to them element by
# element (|a - b| <= atol + rtol |b|; its kTol says which and why). Cases:
# GPT-2, LLaMA untied, LLaMA tied, LLaMA with heads x head_dim != hidden,
# and bf16 GEMMs for both families (PyTorch rounds the same operands).
# reference.self_test checks that the comparison catches planted errors.
add_executable(reference_dump ${CMAKE_CURRENT_LIST_DIR}/reference_dump.cpp)
target_link_libraries(reference_dump PRIVATE parallm_core)
foreach(case gpt2 llama llama_tied llama_head_dim gpt2_bf16 llama_bf16)
  add_test(NAME reference.${case}
           COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                   sh -c "rm -rf ref_${case} && $<TARGET_FILE:reference_dump> ${case} ref_${case} && /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/compare_reference.py ref_${case}"
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(reference.${case} PROPERTIES LABELS reference TIMEOUT 300)
endforeach()
add_test(NAME reference.self_test
         COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                 /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/compare_reference.py --self-test)
set_tests_properties(reference.self_test PROPERTIES LABELS reference TIMEOUT 600)

# Optimizers (sgd, momentum, nesterov, adam, adamw, muon) against torch.optim and a
# float64 Muon reference over 4 steps of fixed gradients.
add_executable(optimizer_dump ${CMAKE_CURRENT_LIST_DIR}/optimizer_dump.cpp)
target_link_libraries(optimizer_dump PRIVATE parallm_core)
add_test(NAME reference.optimizers
         COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                 sh -c "rm -rf ref_optim && $<TARGET_FILE:optimizer_dump> ref_optim && /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/compare_optimizers.py ref_optim"
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.optimizers PROPERTIES LABELS reference TIMEOUT 300)

# Mixtral (docs/moe.md): a MixtralForCausalLM made by transformers, read by
# `parallm eval` (same loss within 1e-5) and written back by parallm (loadable
# with no missing keys, same loss).
add_test(NAME reference.mixtral
         COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                 /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/mixtral_eval.py $<TARGET_FILE:parallm> ref_mixtral
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.mixtral PROPERTIES LABELS reference TIMEOUT 300)

# Qwen2-MoE (docs/moe.md): Qwen2MoeForCausalLM models made by transformers
# (dense and sparse layers, narrower experts, shared expert or none, both
# norm_topk_prob) read by `parallm eval` (same loss within 1e-5) and written
# back by parallm (loadable with no missing keys, same loss; also at ep 2).
add_test(NAME reference.qwen2moe
         COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                 /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/qwen2moe_eval.py $<TARGET_FILE:parallm> ref_qwen2moe
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.qwen2moe PROPERTIES LABELS reference TIMEOUT 300)

# Packed documents in `parallm eval` (docs/context_parallel.md): GPT-2 and
# LLaMA models made by transformers score a packed window as its documents
# run one by one through transformers (1e-5), the flags act, bad EODs refused.
add_test(NAME reference.eval_packed
         COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                 /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/eval_packed.py $<TARGET_FILE:parallm> ref_eval_packed
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.eval_packed PROPERTIES LABELS reference TIMEOUT 300)

# LoRA (docs/lora.md): PEFT adapters made by the peft package read by parallm
# (same loss), parallm's trained adapter read by peft (no missing/unexpected
# keys, same loss), and `export --merge-lora` logits equal to the unmerged ones.
add_test(NAME reference.lora_peft
         COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                 /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/lora_peft.py $<TARGET_FILE:parallm> ref_lora_peft
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.lora_peft PROPERTIES LABELS reference TIMEOUT 300)

# NF4 (docs/qlora.md): parallm's quantisation against bitsandbytes 0.50.2 run
# on Debian's torch through bnb_compat.py: packed bytes, absmax, double
# quantisation and dequantised weights (nf4_compare.py says which exactly).
# scripts/install-deps.sh installs bitsandbytes into this directory, off
# Python's path.
set(PARALLM_BNB_DIR /opt/parallm-py/bitsandbytes-0.50.2)
add_executable(nf4_dump ${CMAKE_CURRENT_LIST_DIR}/nf4_dump.cpp)
target_link_libraries(nf4_dump PRIVATE parallm_core)
add_test(NAME reference.nf4_bitsandbytes
         COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=2
                 sh -c "rm -rf ref_nf4 && mkdir ref_nf4 && /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/nf4_compare.py $<TARGET_FILE:nf4_dump> ref_nf4 ${PARALLM_BNB_DIR}"
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.nf4_bitsandbytes PROPERTIES LABELS reference TIMEOUT 300)

# Megatron indexed datasets (docs/ecosystem.md): files from `parallm tokenize
# --format megatron` and parallm's writer read by a reader written from
# Megatron-LM's published format, and numpy-written Megatron files read by
# parallm (same tokens and document indices), for every integer dtype.
add_executable(megatron_dump ${CMAKE_CURRENT_LIST_DIR}/megatron_dump.cpp)
target_link_libraries(megatron_dump PRIVATE parallm_core)
add_test(NAME reference.megatron_data
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/megatron_compat.py
                 $<TARGET_FILE:parallm> $<TARGET_FILE:megatron_dump> ref_megatron
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.megatron_data PROPERTIES LABELS reference TIMEOUT 120)

# Model families (docs/model_families.md): Llama 3.x rope scaling (llama3,
# linear, dynamic NTK), Qwen2 (q/k/v bias), Mistral (sliding window) and
# Gemma made by transformers: read by `parallm eval` (same loss), trained at
# tp 2 and pp 2 (same losses as one process), written back and loaded by
# transformers with no missing keys.
foreach(family llama3 llama_linear llama_dynamic qwen2 mistral gemma)
  add_test(NAME reference.family.${family}
           COMMAND ${CMAKE_COMMAND} -E env OMP_NUM_THREADS=1
                   /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/hf_family_check.py ${family}
                   $<TARGET_FILE:parallm> ref_family_${family}
           WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(reference.family.${family} PROPERTIES LABELS reference TIMEOUT 300)
endforeach()

# FP8 casts (docs/fp8.md): parallm's E4M3 / E5M2 casts of 7.3M f32 bit
# patterns (every value class, both overflow rules) and the decoding of all
# 256 codes, bit for bit against ml_dtypes (scripts/install-deps.sh).
add_executable(fp8_dump ${CMAKE_CURRENT_LIST_DIR}/fp8_dump.cpp)
target_link_libraries(fp8_dump PRIVATE parallm_core)
add_test(NAME reference.fp8_ml_dtypes
         COMMAND sh -c "rm -rf ref_fp8 && mkdir ref_fp8 && /usr/bin/python3 ${CMAKE_CURRENT_LIST_DIR}/fp8_compare.py $<TARGET_FILE:fp8_dump> ref_fp8"
         WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
set_tests_properties(reference.fp8_ml_dtypes PROPERTIES LABELS reference TIMEOUT 300)
