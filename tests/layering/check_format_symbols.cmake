cmake_minimum_required(VERSION 3.25)
# NOTE [Format library], NOTE [Lite runtime]: libspore_format.a and libspore_lite.a must not need
# the framework. Lists the archive's undefined symbols and fails on any of the namespaces in
# FORBID (default: nn, autograd, optim, data, train). Run as
#   cmake -DNM=<nm> -DLIB=<lib.a> [-DFORBID="nn|graph|..."] -P check_format_symbols.cmake
execute_process(COMMAND "${NM}" -C --undefined-only "${LIB}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIB} (exit ${rc})")
endif()
if(NOT FORBID)
  set(FORBID "nn|autograd|optim|data|train")
endif()
string(REGEX MATCHALL "[^\n]*spore::(${FORBID})::[^\n]*" bad "${out}")
# Autograd's entry points live in namespace spore itself: name them too.
string(REGEX MATCHALL "[^\n]*spore::(value_and_grad|grad|NoGradGuard)[^\n]*" bad_autograd "${out}")
list(APPEND bad ${bad_autograd})
# A positive control: the archive must need the core (tensors), or nm read nothing useful.
if(NOT out MATCHES "spore::Tensor")
  message(FATAL_ERROR "no reference to spore::Tensor among ${LIB}'s undefined symbols: did nm read it?")
endif()
if(bad)
  list(JOIN bad "\n  " lines)
  message(FATAL_ERROR "${LIB} refers to the framework above it:\n  ${lines}")
endif()
message(STATUS "${LIB} needs no symbol of ${FORBID} or autograd")
