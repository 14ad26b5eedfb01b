cmake_minimum_required(VERSION 3.25)
# NOTE [Layers]: the core (src/core) names no backend and does not call up into the ops layer;
# nothing in spore_core outside src/backends/cpu names the CPU backend's code. Run as
#   cmake -DSRC=<repo>/src -P check_core_sources.cmake
# A line may carry "layering-exception: <why>" for a documented, temporary exception.

set(kExcluded "")

set(failures "")
function(scan files pattern why)
  foreach(f ${files})
    file(RELATIVE_PATH rel "${SRC}" "${f}")
    if(rel IN_LIST kExcluded)
      continue()
    endif()
    file(STRINGS "${f}" lines)
    set(n 0)
    foreach(line IN LISTS lines)
      math(EXPR n "${n} + 1")
      if(line MATCHES "${pattern}" AND NOT line MATCHES "layering-exception:")
        set(failures "${failures}\n  src/${rel}:${n}: ${why}: ${line}")
      endif()
    endforeach()
  endforeach()
  set(failures "${failures}" PARENT_SCOPE)
endfunction()

file(GLOB core_files "${SRC}/core/*.h" "${SRC}/core/*.cc")
file(GLOB ops_files "${SRC}/ops/*.h" "${SRC}/ops/*.cc")
if(NOT core_files OR NOT ops_files)
  message(FATAL_ERROR "no sources under ${SRC}/core or ${SRC}/ops: pass -DSRC=<repo>/src")
endif()

# The CPU backend by name: its namespace, its registration, its headers.
set(cpu_names "(spore::cpu|[^a-z_]cpu::|namespace cpu|register_cpu|backends/cpu/)")
scan("${core_files};${ops_files}" "${cpu_names}" "names the CPU backend")
# Calls from the core up into the ops layer: its headers and its entry points.
set(up "(#include \"(\\.\\./)?ops/|spore/op_registry\\.h|spore/ops\\.h|op_families\\.h|[^a-z_]dispatch1?\\(|op_def\\()")
scan("${core_files}" "${up}" "calls up into src/ops")

if(failures)
  message(FATAL_ERROR "layering violations (NOTE [Layers] in docs/design.md):${failures}")
endif()
message(STATUS "layering: src/core and src/ops name no backend; src/core does not call src/ops")
