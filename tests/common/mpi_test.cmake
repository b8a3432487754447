# The one way the test suite starts MPI jobs. Reliable inside a container
# without network: shared memory only, no core binding (ranks share cores),
# yield when idle (ranks outnumber cores), root allowed, one thread per rank.
set(PARALLM_MPIRUN mpirun --oversubscribe --bind-to none --mca btl self,vader
    --mca mpi_yield_when_idle 1)
set(PARALLM_MPI_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1)

# parallm_mpi_test(NAME <test> NP <ranks> TARGET <gtest binary> TIMEOUT <s>)
# registers `mpirun -np <ranks> <binary>` as a ctest test labelled dist.
function(parallm_mpi_test)
  cmake_parse_arguments(ARG "" "NAME;NP;TARGET;TIMEOUT" "" ${ARGN})
  add_test(NAME ${ARG_NAME}
           COMMAND ${CMAKE_COMMAND} -E env ${PARALLM_MPI_ENV}
                   ${PARALLM_MPIRUN} -np ${ARG_NP} $<TARGET_FILE:${ARG_TARGET}>)
  set_tests_properties(${ARG_NAME} PROPERTIES LABELS dist TIMEOUT ${ARG_TIMEOUT})
endfunction()

# parallm_mpi_test_binary(<target> <main.cpp> [<dir>...]) builds one MPI gtest
# binary of <main.cpp> and every *_dist.cpp beside it and in each <dir> (the
# tests of a src folder whose cases share another folder's runs, such as
# tests/parallel/zero's in the data-parallel binary).
function(parallm_mpi_test_binary target main)
  get_filename_component(dir ${main} DIRECTORY)
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*_dist.cpp)
  foreach(extra ${ARGN})
    file(GLOB more CONFIGURE_DEPENDS ${extra}/*_dist.cpp)
    list(APPEND sources ${more})
  endforeach()
  add_executable(${target} ${main} ${sources})
  target_include_directories(${target} PRIVATE ${dir})
  target_link_libraries(${target} PRIVATE parallm_core GTest::gtest)
endfunction()
