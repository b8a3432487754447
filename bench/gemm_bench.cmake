# gemm_bench (bench/gemm_bench.cpp) times OpenBLAS against oneDNN, so it links
# oneDNN itself, whichever GEMM library parallm_core uses (docs/gemm.md).
# Included by bench/CMakeLists.txt after the gemm_bench target exists. Links the
# plain library: Debian's dnnl-config.cmake hard-requires the OpenCL headers.
find_library(PARALLM_DNNL_LIBRARY dnnl REQUIRED)
target_link_libraries(gemm_bench PRIVATE ${PARALLM_DNNL_LIBRARY})
# decode_gemm_bench calls dnnl_sgemm directly beside the skinny kernel.
target_link_libraries(decode_gemm_bench PRIVATE ${PARALLM_DNNL_LIBRARY})
