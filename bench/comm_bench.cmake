# comm_bench: `parallm bench comm` as its own executable (the CLI wiring lives
# in src/cli/bench_command.cpp, which is not part of parallm_core).
target_sources(comm_bench PRIVATE ${CMAKE_SOURCE_DIR}/src/cli/bench_command.cpp)
target_link_libraries(comm_bench PRIVATE CLI11::CLI11)
