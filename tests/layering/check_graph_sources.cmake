cmake_minimum_required(VERSION 3.25)
# NOTE [Graph library layering]: the graph library (src/graph, spore_graph) sits below nn,
# autograd, optim, data and train: no file of it includes their headers. Run as
#   cmake -DSRC=<repo>/src -DINCLUDE=<repo>/include -P check_graph_sources.cmake
# It also checks that the public headers the graph library's sources include (spore/jit.h,
# spore/graph.h, spore/export.h, spore/control_flow.h) do not pull those headers in either.
if(NOT IS_DIRECTORY "${SRC}/graph" OR NOT IS_DIRECTORY "${INCLUDE}/spore")
  message(FATAL_ERROR "pass -DSRC=<repo>/src -DINCLUDE=<repo>/include")
endif()
file(GLOB_RECURSE graph_files "${SRC}/graph/*.h" "${SRC}/graph/*.cc")
set(public_headers "${INCLUDE}/spore/jit.h" "${INCLUDE}/spore/graph.h" "${INCLUDE}/spore/export.h"
                   "${INCLUDE}/spore/control_flow.h" "${INCLUDE}/spore/tensor_fn.h")
set(above "#include \"(spore/(nn/|nn\\.h|autograd\\.h|optim|data\\.h|data/|train)|(\\.\\./)?(nn|autograd|optim|data|train)/)")
set(failures "")
set(scanned 0)
foreach(f ${graph_files} ${public_headers})
  file(STRINGS "${f}" lines)
  set(n 0)
  foreach(line IN LISTS lines)
    math(EXPR n "${n} + 1")
    if(line MATCHES "${above}")
      set(failures "${failures}\n  ${f}:${n}: ${line}")
    endif()
  endforeach()
  math(EXPR scanned "${scanned} + 1")
endforeach()
# A positive control: the scan must have read the graph library's own files.
if(scanned LESS 10)
  message(FATAL_ERROR "only ${scanned} files scanned under ${SRC}/graph: wrong -DSRC?")
endif()
if(failures)
  message(FATAL_ERROR "the graph library includes the framework above it (NOTE [Graph library layering]):${failures}")
endif()
message(STATUS "layering: ${scanned} graph library files include nothing of nn, autograd, optim, data or train")
