// LoRA adapters in the server (NOTE [LoRA adapters]), with llama-server's conventions: adapters
// are loaded at start (--lora PATH[:SCALE], ids 0, 1, ... in that order) with a global scale each
// (1, or 0 under --lora-init-without-apply); GET /lora-adapters lists [{"id", "path", "scale"}],
// POST /lora-adapters sets the global scales ([{"id", "scale"}], adapters not listed get 0); a
// request's "lora": [{"id", "scale"}] overrides them for that request (unlisted adapters: 0).
// Every sequence runs its own adapters in the shared batch (the engine mixes them per row).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spore/nlp/lora.h"

namespace spore::serve {

// One {"id", "scale"} of a request's or POST's list.
struct LoraScale {
  int64_t id = 0;
  double scale = 1;
};

// The "lora" field of a request body (absent or null: nullopt). ApiError 400 naming the field when
// it is not a list of {"id": integer in [0, adapters), "scale": finite number} with distinct ids.
// (Reached by the serve_request fuzz target through parse_completion_request.)
std::optional<std::vector<LoraScale>> parse_lora_field(const nlohmann::json& body, int64_t adapters);

class LoraAdapters {
 public:
  // Loads each PATH[:SCALE] for `model`; `apply`: false gives every global scale 0.
  void load(const std::vector<std::string>& args, bool apply, const nlp::LoadedModel& model);
  int64_t size() const { return static_cast<int64_t>(uses_.size()); }
  // GET /lora-adapters.
  nlohmann::json list() const;
  // POST /lora-adapters: the body as text; ApiError 400 when it is not such a list.
  void set_scales(const std::string& body);
  // What a request runs: its own list when it gave one, else the global scales.
  std::vector<nlp::LoraUse> for_request(const std::optional<std::vector<LoraScale>>& requested) const;

 private:
  mutable std::mutex mu_;
  std::vector<nlp::LoraUse> uses_;  // id = index; scale: the global one
};

}  // namespace spore::serve
