// What GET /v1/models and /metrics say about the served models (NOTE [Many models]).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>

#include "serve/metrics.h"
#include "serve/model_registry.h"

namespace spore::serve {

// OpenAI's list shape ({"object": "list", "data": [{"id", "object": "model", "created",
// "owned_by"}]}) with every catalogued model, plus llama.cpp-style "meta" for a loaded one and
// Spore's "status": {"state": loaded | loading | unloaded | failed | too_large, "bytes", "error"}.
nlohmann::json model_list(const ModelRegistry& registry, int64_t created, int64_t slots);

// The loaded models' worker gauges, summed (ready is left to the caller).
Gauges loaded_gauges(const ModelRegistry& registry);

}  // namespace spore::serve
