#include "spore/error.h"

namespace spore {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kShape: return "shape";
    case ErrorCode::kDType: return "dtype";
    case ErrorCode::kDevice: return "device";
    case ErrorCode::kIndex: return "index";
    case ErrorCode::kValue: return "value";
    case ErrorCode::kIO: return "io";
    case ErrorCode::kFormat: return "format";
    case ErrorCode::kVersion: return "version";
    case ErrorCode::kUnsupported: return "unsupported";
    case ErrorCode::kInternal: return "internal";
  }
  return "unknown";
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(std::string("[spore ") + error_code_name(code) + " error] " + message),
      code_(code) {}

}  // namespace spore
