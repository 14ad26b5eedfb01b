// spore::Error: the one exception type of the C++ API. Every error carries a code a program can
// switch on and a message a person can act on (what was wrong, with which values, what to do).
#pragma once
#include <stdexcept>
#include <string>

namespace spore {

enum class ErrorCode {
  kShape,     // shapes do not fit together (broadcast, matmul, reshape...)
  kDType,     // a dtype is not accepted, or a backend has no kernel for it
  kDevice,    // a device is unknown, absent, or tensors live on different devices
  kIndex,     // an axis or index is out of range
  kValue,     // a value is out of its domain (negative size, bad step, ...)
  kIO,        // reading or writing a file failed
  kFormat,    // a file or message is not what it claims to be
  kVersion,   // an artifact is newer than this build understands
  kUnsupported,  // the request is valid but this build cannot do it
  kInternal,  // a broken invariant inside Spore: always a bug
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace spore
