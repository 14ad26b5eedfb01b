#include "common/errors.h"

#include <map>
#include <mutex>
#include <regex>

namespace py = pybind11;

namespace spore::py_bind {
namespace {

PyObject* g_classes[10] = {};

struct ClassSpec {
  ErrorCode code;
  const char* name;
  PyObject* builtin;  // a second base besides SporeError, or nullptr
  const char* doc;
};

// Python exceptions kept across C++ frames (NOTE [Python callbacks]); touched with the GIL held.
std::map<long, py::object>& pending() {
  static auto* m = new std::map<long, py::object>();  // never destroyed: outlives the interpreter
  return *m;
}
long g_next_ticket = 1;
constexpr const char* kTicketTag = " [python exception #";

// Re-raises the Python exception a message's ticket refers to, with the message's C++ context
// as a note; false when the message has no (known) ticket.
bool reraise_ticket(const std::string& message) {
  size_t at = message.rfind(kTicketTag);
  if (at == std::string::npos) return false;
  long ticket = std::strtol(message.c_str() + at + std::char_traits<char>::length(kTicketTag), nullptr, 10);
  auto it = pending().find(ticket);
  if (it == pending().end()) return false;
  py::object exc = std::move(it->second);
  pending().erase(it);
  // The context C++ added ("stage 2 'map' ..., row 3: the map function threw: ValueError: ...").
  std::string context = message.substr(0, at);
  if (py::hasattr(exc, "add_note")) {
    try {
      exc.attr("add_note")("spore: " + context);
    } catch (py::error_already_set&) {
      PyErr_Clear();
    }
  }
  PyErr_SetObject((PyObject*)Py_TYPE(exc.ptr()), exc.ptr());
  return true;
}

}  // namespace

PyObject* error_class(ErrorCode code) { return g_classes[(int)code]; }

void register_errors(py::module_& m) {
  const std::string mod = py::str(m.attr("__name__"));
  PyObject* base = PyErr_NewExceptionWithDoc((mod + ".SporeError").c_str(),
                                             "Every error Spore raises: a RuntimeError with Spore's "
                                             "message; subclasses per error code.",
                                             PyExc_RuntimeError, nullptr);
  m.attr("SporeError") = py::handle(base);
  const ClassSpec specs[] = {
      {ErrorCode::kShape, "ShapeError", PyExc_ValueError, "Shapes do not fit together."},
      {ErrorCode::kDType, "DTypeError", PyExc_TypeError, "A dtype is not accepted."},
      {ErrorCode::kDevice, "DeviceError", nullptr, "A device is unknown, absent or mixed."},
      {ErrorCode::kIndex, "SporeIndexError", PyExc_IndexError, "An axis or index is out of range."},
      {ErrorCode::kValue, "SporeValueError", PyExc_ValueError, "A value is out of its domain."},
      {ErrorCode::kIO, "SporeIOError", PyExc_OSError, "Reading or writing a file failed."},
      {ErrorCode::kFormat, "FormatError", PyExc_ValueError, "A file is not what it claims to be."},
      {ErrorCode::kVersion, "VersionError", nullptr, "An artifact is newer than this build reads."},
      {ErrorCode::kUnsupported, "UnsupportedError", PyExc_NotImplementedError,
       "Valid, but this build cannot do it."},
      {ErrorCode::kInternal, "InternalError", nullptr, "A broken invariant inside Spore: a bug."},
  };
  for (const ClassSpec& s : specs) {
    PyObject* bases = s.builtin ? PyTuple_Pack(2, base, s.builtin) : PyTuple_Pack(1, base);
    PyObject* cls = PyErr_NewExceptionWithDoc((mod + "." + s.name).c_str(), s.doc, bases, nullptr);
    Py_DECREF(bases);
    if (!cls) throw py::error_already_set();
    g_classes[(int)s.code] = cls;
    m.attr(s.name) = py::handle(cls);
  }
  py::register_local_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      if (!reraise_ticket(e.what())) PyErr_SetString(error_class(e.code()), e.what());
    }
  });
}

void throw_from_python_error(py::error_already_set& e) {
  const long ticket = g_next_ticket++;
  std::string what = e.what();  // "ValueError: message"
  e.restore();
  PyObject *type, *value, *tb;
  PyErr_Fetch(&type, &value, &tb);
  PyErr_NormalizeException(&type, &value, &tb);
  if (tb) PyException_SetTraceback(value, tb);
  py::object exc = py::reinterpret_steal<py::object>(value);
  Py_XDECREF(type);
  Py_XDECREF(tb);
  pending()[ticket] = std::move(exc);
  if (pending().size() > 64) pending().erase(pending().begin());  // never re-raised: drop the oldest
  throw Error(ErrorCode::kValue, what + kTicketTag + std::to_string(ticket) + "]");
}

}  // namespace spore::py_bind
