# LoRA layout invariance (label dist): dp 2 ZeRO-2/3, tp 2 + sp, pp 2 against
# the one-process run each rank computes itself.
parallm_mpi_test_binary(lora_dist_tests ${CMAKE_CURRENT_LIST_DIR}/lora_layout_dist.cpp)
parallm_mpi_test(NAME train.lora.np2 NP 2 TARGET lora_dist_tests TIMEOUT 600)
