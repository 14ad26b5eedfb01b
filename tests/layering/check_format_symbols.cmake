cmake_minimum_required(VERSION 3.25)
# NOTE [Format library]: libspore_format.a must not need the framework. Lists the archive's
# undefined symbols and fails on any of nn, autograd, optim, data or train. Run as
#   cmake -DNM=<nm> -DLIB=<libspore_format.a> -P check_format_symbols.cmake
execute_process(COMMAND "${NM}" -C --undefined-only "${LIB}" OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIB} (exit ${rc})")
endif()
string(REGEX MATCHALL "[^\n]*spore::(nn|autograd|optim|data|train)::[^\n]*" bad "${out}")
# A positive control: the archive must need the core (tensors), or nm read nothing useful.
if(NOT out MATCHES "spore::Tensor")
  message(FATAL_ERROR "no reference to spore::Tensor among ${LIB}'s undefined symbols: did nm read it?")
endif()
if(bad)
  list(JOIN bad "\n  " lines)
  message(FATAL_ERROR "${LIB} refers to the framework above it:\n  ${lines}")
endif()
message(STATUS "spore_format needs no nn, autograd, optim, data or train symbol")
