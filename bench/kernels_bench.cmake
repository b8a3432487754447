# kernels_bench links Google Benchmark (its executable is created by
# bench/CMakeLists.txt from kernels_bench.cpp; main comes from benchmark_main).
find_package(benchmark REQUIRED)
target_link_libraries(kernels_bench PRIVATE benchmark::benchmark benchmark::benchmark_main)
