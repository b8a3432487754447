# The layers of parallm (docs/architecture.md): one static library per layer,
# each linking only the layers below it, and a configure-time check that no
# source includes a header of a layer it does not depend on. A static
# library would still link a wrong-way call (the executable links every
# layer), so the include check is what makes a wrong way fail: cmake stops
# and names the file, the header and both layers.

set(PARALLM_LAYERS "")

# parallm_layer(NAME DIRS dir... [DEPS layer...] [SEALS layer...] [LINKS target...] [EXCLUDE regex])
# DIRS are relative to src/; a directory belongs to the layer that names the
# longest prefix of it (parallel/tensor is its own layer below model, the
# rest of parallel/ above it). SEALS names deps that this layer hides: the
# layers above it reach them only through it (the op interface seals the
# kernels, so nothing above src/ops includes a kernel header or names
# cpu:: or cuda::).
function(parallm_layer name)
  cmake_parse_arguments(L "" "EXCLUDE" "DIRS;DEPS;SEALS;LINKS" ${ARGN})
  set(sources "")
  foreach(d ${L_DIRS})
    file(GLOB_RECURSE s CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${d}/*.cpp)
    list(APPEND sources ${s})
  endforeach()
  if(L_EXCLUDE)
    list(FILTER sources EXCLUDE REGEX "${L_EXCLUDE}")
  endif()
  set(PARALLM_LAYER_${name}_DIRS ${L_DIRS} PARENT_SCOPE)
  set(PARALLM_LAYER_${name}_DEPS ${L_DEPS} PARENT_SCOPE)
  set(PARALLM_LAYER_${name}_SEALS ${L_SEALS} PARENT_SCOPE)
  set(PARALLM_LAYERS ${PARALLM_LAYERS} ${name} PARENT_SCOPE)
  set(target parallm_${name})
  if(sources)
    add_library(${target} STATIC ${sources})
    set(scope PUBLIC)
  else()
    add_library(${target} INTERFACE)
    set(scope INTERFACE)
  endif()
  target_include_directories(${target} ${scope} ${PROJECT_SOURCE_DIR}/src)
  # Designated initializers leave fields at their defaults on purpose.
  target_compile_options(${target} ${scope} -Wall -Wextra -Wno-unused-parameter
                         -Wno-missing-field-initializers)
  if(sources)
    # Nothing reads errno after a math call; without this, glibc's errno
    # path around sqrtf keeps the optimizer loops scalar (docs/optimizers.md).
    # Nothing traps on floating-point exceptions either; without that, GCC
    # keeps the compare-and-select clamps of vec_math.h's exp as branches
    # and every loop over it (GELU, SiLU, softmax, log-sum-exp) scalar.
    target_compile_options(${target} PRIVATE -fno-math-errno -fno-trapping-math)
  endif()
  if(PARALLM_NATIVE)
    # 256-bit vectors even where AVX-512 exists: a vectorised reduction
    # (`omp simd reduction`) then sums in 8 lanes on every AVX2 and AVX-512
    # machine, so parallm's own kernels give the same bits on all of them
    # (GCC already prefers 256 bits on Intel's AVX-512 cores; on AMD's Zen 4
    # it would use 512 and sum in 16). Where AVX-512 pays (oneDNN's GEMMs,
    # bf16 conversion) the code chooses it at run time, under
    # PARALLM_MAX_CPU_ISA (docs/testing.md).
    target_compile_options(${target} ${scope} -march=native -mprefer-vector-width=256)
  endif()
  foreach(dep ${L_DEPS})
    target_link_libraries(${target} ${scope} parallm_${dep})
  endforeach()
  if(L_LINKS)
    target_link_libraries(${target} ${scope} ${L_LINKS})
  endif()
endfunction()

# Writes the layer table, checks it now, and adds a build step that checks
# it again on every build (the configure step does not rerun when only an
# #include line changes).
function(parallm_enforce_layers)
  set(table ${PROJECT_BINARY_DIR}/parallm_layers.cmake)
  set(text "set(PARALLM_SRC_ROOT \"${PROJECT_SOURCE_DIR}\")\nset(PARALLM_LAYERS ${PARALLM_LAYERS})\n")
  foreach(name ${PARALLM_LAYERS})
    string(APPEND text "set(PARALLM_LAYER_${name}_DIRS ${PARALLM_LAYER_${name}_DIRS})\n")
    string(APPEND text "set(PARALLM_LAYER_${name}_DEPS ${PARALLM_LAYER_${name}_DEPS})\n")
    string(APPEND text "set(PARALLM_LAYER_${name}_SEALS ${PARALLM_LAYER_${name}_SEALS})\n")
  endforeach()
  file(WRITE ${table} "${text}")
  set(PARALLM_LAYER_TABLE ${table})
  include(${PROJECT_SOURCE_DIR}/cmake/CheckLayers.cmake)
  add_custom_target(parallm_layer_check ALL
                    COMMAND ${CMAKE_COMMAND} -DPARALLM_LAYER_TABLE=${table}
                            -P ${PROJECT_SOURCE_DIR}/cmake/CheckLayers.cmake
                    COMMENT "Checking that no layer of src/ includes a higher one or a sealed one")
  foreach(name ${PARALLM_LAYERS})
    if(TARGET parallm_${name})  # layers not built here (CUDA without nvcc) are still checked
      add_dependencies(parallm_${name} parallm_layer_check)
    endif()
  endforeach()
endfunction()
