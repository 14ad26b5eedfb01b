// Adapters in the server (lora_adapters.h, NOTE [LoRA adapters]).
#include "serve/lora_adapters.h"

#include <cmath>
#include <cstdio>
#include <set>

#include "io/json_depth.h"
#include "serve/api_error.h"

namespace spore::serve {

using json = nlohmann::json;

std::optional<std::vector<LoraScale>> parse_lora_field(const json& body, int64_t adapters) {
  auto it = body.find("lora");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_array())
    throw bad_field("lora", "expected a list of {\"id\": N, \"scale\": S}, got JSON " + std::string(it->type_name()),
                    "invalid_type");
  std::vector<LoraScale> out;
  std::set<int64_t> seen;
  for (size_t i = 0; i < it->size(); ++i) {
    const json& e = (*it)[i];
    const std::string at = "lora[" + std::to_string(i) + "]";
    if (!e.is_object()) throw bad_field(at, "expected an object {\"id\": N, \"scale\": S}", "invalid_type");
    auto id = e.find("id"), scale = e.find("scale");
    if (id == e.end() || !id->is_number_integer()) throw bad_field(at + ".id", "expected an integer adapter id", "invalid_type");
    if (scale == e.end() || !scale->is_number()) throw bad_field(at + ".scale", "expected a number", "invalid_type");
    LoraScale s{id->get<int64_t>(), scale->get<double>()};
    if (s.id < 0 || s.id >= adapters)
      throw bad_field(at + ".id", "there is no adapter " + std::to_string(s.id) + "; this server holds " +
                                      std::to_string(adapters) + " (GET /lora-adapters lists them; load more with --lora)");
    if (!std::isfinite(s.scale)) throw bad_field(at + ".scale", "the scale must be a finite number");
    if (!seen.insert(s.id).second) throw bad_field(at + ".id", "adapter " + std::to_string(s.id) + " is listed twice");
    out.push_back(s);
  }
  return out;
}

void LoraAdapters::load(const std::vector<std::string>& args, bool apply, const nlp::LoadedModel& model) {
  std::vector<nlp::LoraUse> uses;
  for (const std::string& arg : args) {
    const auto [path, scale] = nlp::parse_lora_argument(arg);
    uses.push_back({nlp::load_lora(path, model), apply ? scale : 0.0});
    const nlp::LoraAdapter& a = *uses.back().adapter;
    std::fprintf(stderr, "spore serve: LoRA adapter %zu: %s (%s, %lld projections, rank up to %lld), scale %g\n",
                 uses.size() - 1, path.string().c_str(), a.format.c_str(), (long long)a.pairs, (long long)a.max_rank,
                 uses.back().scale);
  }
  std::lock_guard<std::mutex> lock(mu_);
  uses_ = std::move(uses);
}

json LoraAdapters::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  json out = json::array();
  for (size_t i = 0; i < uses_.size(); ++i)
    out.push_back({{"id", i}, {"path", uses_[i].adapter->path.string()}, {"scale", uses_[i].scale}});
  return out;
}

void LoraAdapters::set_scales(const std::string& body) {
  json list;
  try {
    list = io::parse_json_bounded<json>(body);
  } catch (const std::exception&) {
    throw ApiError(400, "The body is not valid JSON; send a list of {\"id\": N, \"scale\": S}", "invalid_request_error", "",
                   "invalid_json");
  }
  std::lock_guard<std::mutex> lock(mu_);
  const auto scales = parse_lora_field(json{{"lora", list}}, static_cast<int64_t>(uses_.size()));
  if (!scales) throw bad_field("lora", "expected a list of {\"id\": N, \"scale\": S}", "invalid_type");
  for (nlp::LoraUse& u : uses_) u.scale = 0;
  for (const LoraScale& s : *scales) uses_[static_cast<size_t>(s.id)].scale = s.scale;
}

std::vector<nlp::LoraUse> LoraAdapters::for_request(const std::optional<std::vector<LoraScale>>& requested) const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<nlp::LoraUse> out;
  if (!requested) {
    for (const nlp::LoraUse& u : uses_)
      if (u.scale != 0) out.push_back(u);
    return out;
  }
  for (const LoraScale& s : *requested)
    if (s.scale != 0) out.push_back({uses_.at(static_cast<size_t>(s.id)).adapter, s.scale});
  return out;
}

}  // namespace spore::serve
