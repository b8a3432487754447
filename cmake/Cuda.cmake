# The CUDA backend (docs/cuda.md): built whenever nvcc is found, also on
# machines with no GPU (CI compiles it; its tests, labelled gpu, say that
# they did not run). Targets Hopper (sm_90: H100/H200) unless
# CMAKE_CUDA_ARCHITECTURES names others.
include(CheckLanguage)
option(PARALLM_CUDA "Build the CUDA backend when nvcc is found" ON)
set(PARALLM_HAVE_CUDA OFF)
if(PARALLM_CUDA)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)  # CMake 3.25 knows no CUDA20 dialect
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    find_library(PARALLM_NCCL nccl HINTS ${CUDAToolkit_LIBRARY_DIR})
    set(PARALLM_HAVE_CUDA ON)
    message(STATUS "parallm: CUDA backend on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES}, NCCL ${PARALLM_NCCL})")
  else()
    message(STATUS "parallm: no nvcc found; the CUDA backend is not built")
  endif()
endif()

# parallm_unbuilt_layer(NAME DIRS dir... DEPS layer...): a layer this build
# leaves out (the CUDA ones without nvcc), still registered so the layer
# check knows its directories and the includes they may make.
function(parallm_unbuilt_layer name)
  cmake_parse_arguments(L "" "" "DIRS;DEPS" ${ARGN})
  set(PARALLM_LAYER_${name}_DIRS ${L_DIRS} PARENT_SCOPE)
  set(PARALLM_LAYER_${name}_DEPS ${L_DEPS} PARENT_SCOPE)
  set(PARALLM_LAYERS ${PARALLM_LAYERS} ${name} PARENT_SCOPE)
endfunction()

# parallm_cuda_layer(NAME DIRS dir... DEPS layer... [LINKS target...]): a
# layer of .cu and .cpp sources, registered with the layer check like the rest.
function(parallm_cuda_layer name)
  cmake_parse_arguments(L "" "" "DIRS;DEPS;LINKS" ${ARGN})
  set(sources "")
  foreach(d ${L_DIRS})
    file(GLOB_RECURSE s CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${d}/*.cu
         ${PROJECT_SOURCE_DIR}/src/${d}/*.cpp)
    list(APPEND sources ${s})
  endforeach()
  set(PARALLM_LAYER_${name}_DIRS ${L_DIRS} PARENT_SCOPE)
  set(PARALLM_LAYER_${name}_DEPS ${L_DEPS} PARENT_SCOPE)
  set(PARALLM_LAYERS ${PARALLM_LAYERS} ${name} PARENT_SCOPE)
  set(target parallm_${name})
  if(NOT sources)
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
  else()
    add_library(${target} STATIC ${sources})
    set(scope PUBLIC)
    target_compile_options(${target} PRIVATE
        $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
        $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr -lineinfo>)
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  endif()
  target_include_directories(${target} ${scope} ${PROJECT_SOURCE_DIR}/src)
  foreach(dep ${L_DEPS})
    target_link_libraries(${target} ${scope} parallm_${dep})
  endforeach()
  target_link_libraries(${target} ${scope} CUDA::cudart_static ${L_LINKS})
endfunction()
