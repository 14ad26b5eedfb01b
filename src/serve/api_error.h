// The OpenAI error object every 4xx/5xx answer carries:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}}
#pragma once
#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

namespace spore::serve {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string type = "invalid_request_error", std::string param = "",
           std::string code = "")
      : std::runtime_error(message), status(status), type(std::move(type)), param(std::move(param)),
        code(std::move(code)) {}
  int status;
  std::string type, param, code;

  nlohmann::json to_json() const {
    nlohmann::json e = {{"message", what()}, {"type", type}};
    e["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
    e["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
    return {{"error", e}};
  }
};

// A 400 about one request field.
inline ApiError bad_field(const std::string& param, const std::string& message, const std::string& code = "invalid_value") {
  return ApiError(400, "'" + param + "': " + message, "invalid_request_error", param, code);
}

}  // namespace spore::serve
