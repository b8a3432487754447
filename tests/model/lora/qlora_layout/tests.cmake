# QLoRA layout invariance (label dist): NF4 base, dp 2 ZeRO-2, tp 2 + sp, pp 2,
# fp32 and bf16, against the one-process QLoRA run.
parallm_mpi_test_binary(qlora_dist_tests ${CMAKE_CURRENT_LIST_DIR}/qlora_layout_dist.cpp)
parallm_mpi_test(NAME train.qlora.np2 NP 2 TARGET qlora_dist_tests TIMEOUT 900)
