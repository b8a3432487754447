# The layering check of cmake/Layers.cmake, usable at configure time and in
# script mode (cmake -P) from the build, so that an edit that adds a
# wrong-way include fails the next build too, not only the next configure.
# Needs PARALLM_SRC_ROOT (the source tree), PARALLM_LAYERS and, per layer,
# PARALLM_LAYER_<name>_DIRS / _DEPS; in script mode they come from
# PARALLM_LAYER_TABLE (a file the configure step writes).
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST) in script mode
if(PARALLM_LAYER_TABLE)
  include(${PARALLM_LAYER_TABLE})
endif()

# The layer a path under src/ belongs to (longest matching directory), or "".
function(parallm_layer_of path out)
  set(best "")
  set(best_len 0)
  foreach(name ${PARALLM_LAYERS})
    foreach(d ${PARALLM_LAYER_${name}_DIRS})
      string(LENGTH "${d}/" n)
      string(SUBSTRING "${path}" 0 ${n} head)
      if(head STREQUAL "${d}/" AND n GREATER best_len)
        set(best ${name})
        set(best_len ${n})
      endif()
    endforeach()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()

# Every layer `name` may include: itself and everything below it, except
# what a layer below seals (its SEALS are reachable from it alone).
function(parallm_layer_closure name out)
  set(seen ${name})
  set(todo ${PARALLM_LAYER_${name}_DEPS})
  while(todo)
    list(POP_FRONT todo dep)
    if(NOT dep IN_LIST seen)
      list(APPEND seen ${dep})
      foreach(next ${PARALLM_LAYER_${dep}_DEPS})
        if(NOT next IN_LIST PARALLM_LAYER_${dep}_SEALS)
          list(APPEND todo ${next})
        endif()
      endforeach()
    endif()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

# Fails (configure or build) on every wrong-way include of src/, naming them.
function(parallm_check_layers)
  set(errors "")
  foreach(name ${PARALLM_LAYERS})
    parallm_layer_closure(${name} allowed)
    foreach(d ${PARALLM_LAYER_${name}_DIRS})
      file(GLOB_RECURSE files ${PARALLM_SRC_ROOT}/src/${d}/*.h
           ${PARALLM_SRC_ROOT}/src/${d}/*.cpp ${PARALLM_SRC_ROOT}/src/${d}/*.cu
           ${PARALLM_SRC_ROOT}/src/${d}/*.cuh)
      foreach(f ${files})
        file(RELATIVE_PATH rel ${PARALLM_SRC_ROOT}/src ${f})
        parallm_layer_of("${rel}" owner)
        if(NOT owner STREQUAL name)
          continue()  # a sub-directory that is a layer of its own
        endif()
        file(STRINGS ${f} includes REGEX "^[ \t]*#[ \t]*include[ \t]+\"[^\"]+\"")
        foreach(line ${includes})
          string(REGEX REPLACE "^[^\"]*\"([^\"]+)\".*$" "\\1" header "${line}")
          parallm_layer_of("${header}" target)
          if(target AND NOT target IN_LIST allowed)
            string(APPEND errors
                   "\n  src/${rel} (layer ${name}) includes ${header} (layer ${target}), which is not below it or is sealed")
          endif()
        endforeach()
        # Above the op interface no code names a backend's namespace either
        # (a kernel type re-exported by an ops header is used as ops::...).
        if(ops IN_LIST allowed AND NOT kernels IN_LIST allowed AND NOT kernels_cuda IN_LIST allowed)
          file(STRINGS ${f} calls REGEX "(^|[^A-Za-z0-9_])(cpu|cuda)::")
          foreach(line ${calls})
            string(STRIP "${line}" line)
            if(NOT line MATCHES "^//")
              string(APPEND errors "\n  src/${rel} (layer ${name}) calls a kernel above src/ops: ${line}")
            endif()
          endforeach()
        endif()
      endforeach()
    endforeach()
  endforeach()
  if(errors)
    message(FATAL_ERROR "parallm layering: a lower layer includes a higher one, or code above src/ops reaches a kernel "
                        "(docs/architecture.md):${errors}")
  endif()
endfunction()

parallm_check_layers()
