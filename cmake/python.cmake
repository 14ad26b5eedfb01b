# The Python modules' prerequisites (NOTE [Python modules] in docs/design.md): an interpreter with
# its development headers and pybind11. SPORE_PYTHON defaults to ON when both are found.
#
# The interpreter: on Debian, /usr/bin/python3 is the one python3-dev, pybind11-dev and
# python3-numpy are built for; the first `python3` on PATH may be another (a pyenv build without
# NumPy), so it is the default unless the caller (scikit-build-core, -DPython3_EXECUTABLE=...)
# names one.
if(NOT DEFINED Python3_EXECUTABLE AND NOT DEFINED Python_EXECUTABLE AND EXISTS /usr/bin/python3)
  set(Python3_EXECUTABLE /usr/bin/python3 CACHE FILEPATH "the interpreter the Python modules are built for")
elseif(DEFINED Python_EXECUTABLE AND NOT DEFINED Python3_EXECUTABLE)
  set(Python3_EXECUTABLE ${Python_EXECUTABLE})
endif()
find_package(Python3 COMPONENTS Interpreter Development.Module QUIET)
set(SPORE_PYTHON_DEFAULT OFF)
if(Python3_FOUND)
  # pybind11 from Debian (pybind11-dev) or from the build environment (pip's pybind11).
  if(NOT pybind11_DIR)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "import pybind11; print(pybind11.get_cmake_dir())"
                    OUTPUT_VARIABLE _spore_pybind11_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(_spore_pybind11_dir)
      list(APPEND CMAKE_PREFIX_PATH ${_spore_pybind11_dir})
    endif()
  endif()
  find_package(pybind11 2.10 CONFIG QUIET)
  # Sanitized builds (asan, fuzz) are off by default: an ASan-instrumented extension cannot be
  # loaded by an uninstrumented interpreter (the ASan runtime must come first in the process).
  if(pybind11_FOUND AND NOT SPORE_SANITIZE AND NOT SPORE_FUZZ)
    set(SPORE_PYTHON_DEFAULT ON)
  endif()
endif()
option(SPORE_PYTHON "Build the Python modules spore and spore_lite (needs pybind11 and Python 3 headers)"
       ${SPORE_PYTHON_DEFAULT})
if(SPORE_PYTHON AND NOT (Python3_FOUND AND pybind11_FOUND))
  message(FATAL_ERROR "SPORE_PYTHON is ON but Python 3 development files or pybind11 were not found "
                      "(install python3-dev and pybind11-dev: bash scripts/install-deps.sh)")
endif()
