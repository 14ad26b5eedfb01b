// Pieces of `spore convert` (include/spore/nlp/convert.h), one file each.
#pragma once
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "spore/gguf_writer.h"

namespace spore::nlp::convert {

// Reads a JSON file; kIO when it cannot be read, kFormat naming the file when it is not JSON.
nlohmann::json read_json_file(const std::filesystem::path& path);

// tokenizer.ggml.* and tokenizer.chat_template from tokenizer.json, tokenizer_config.json (and
// chat_template.jinja) and config.json's special token ids, as llama.cpp's converter writes them
// for a byte-level BPE tokenizer (its get_vocab_base + SpecialVocab). Returns the merge count.
size_t add_tokenizer_metadata(GgufWriter& w, const std::filesystem::path& dir, int64_t vocab_size,
                              const nlohmann::json& config);

}  // namespace spore::nlp::convert
