// spore::Error as Python exceptions (NOTE [Python modules]): each module gets a SporeError
// hierarchy of its own, one class per ErrorCode, deriving from the built-in exception a Python
// user expects for that kind of mistake as well (ShapeError is a ValueError, DTypeError a
// TypeError, ...), so `except ValueError` works and `except spore.SporeError` catches them all.
#pragma once
#include <pybind11/pybind11.h>

#include <string>

#include "spore/error.h"

namespace spore::py_bind {

// Creates the classes in `m` (SporeError, ShapeError, ...) and registers a translator local to
// this module that raises them for spore::Error with Spore's message.
void register_errors(pybind11::module_& m);

// The class for an error code (after register_errors).
PyObject* error_class(ErrorCode code);

// NOTE [Python callbacks]: a Python exception raised inside a callback that C++ calls (a
// dataset's generator or map function, a function being traced or differentiated) must cross C++
// frames that may catch std::exception and add context (the dataset's stage). The callback
// catches it with the GIL held, keeps the exception object under a ticket and throws a
// spore::Error whose message ends with the ticket; when the error reaches Python, the translator
// finds the ticket and re-raises the original exception (same type, same traceback) with C++'s
// context added as a note ("in stage 2 'map', row 3"). Call with the GIL held.
[[noreturn]] void throw_from_python_error(pybind11::error_already_set& e);

}  // namespace spore::py_bind
