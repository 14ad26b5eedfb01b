// The embedded default model (SmolLM2-135M-Instruct, Q4_1 GGUF, scripts/fetch-model.sh) for the
// tests that run it; they skip, saying so, when it has not been fetched.
#pragma once
#include <filesystem>

namespace spore::test {

inline const std::filesystem::path kModel = std::filesystem::path(SPORE_SOURCE_DIR) / "models/smollm2-135m-instruct";

inline bool have_model() {
  if (!std::filesystem::is_directory(kModel)) return false;
  for (const auto& e : std::filesystem::directory_iterator(kModel))
    if (e.path().extension() == ".gguf") return true;
  return false;
}

}  // namespace spore::test
