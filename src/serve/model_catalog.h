// Which models `spore serve` offers, and under which names (NOTE [Many models]): the catalogue is
// fixed at start-up from --model and --models; a request's "model" is only ever looked up in it
// (never joined to a path), so no request can reach a file the catalogue did not list.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace spore::serve {

struct ModelSource {
  std::string name;             // what requests send as "model", and /v1/models lists
  std::filesystem::path path;   // a .gguf file or a Hugging Face directory
};

// The name `--model PATH` serves PATH under: a file's stem; for a directory without a
// config.json holding one .gguf, that file's stem (what the server has always answered), else
// the directory's name.
std::string model_name_for_path(const std::filesystem::path& path);

// The models directly inside `dir`: every `*.gguf` file (named by its stem; LoRA adapter GGUFs,
// general.type "adapter", are skipped) and every subdirectory holding a config.json or a .gguf
// (named by the directory's name). Hidden entries
// (".x") are skipped; symbolic links are followed (the operator put them there). Sorted by
// name. kIO naming `dir` when it cannot be read; kValue naming both paths when two entries would
// get one name (e.g. a.gguf beside a/), and when there is none.
std::vector<ModelSource> models_in_directory(const std::filesystem::path& dir);

// The whole catalogue: each --model (in order), then each --models directory's models. kValue
// naming both paths when two get one name, and for a name the HTTP API could not carry (empty,
// or with '/', '\', a control byte, or ".."-only).
std::vector<ModelSource> model_catalog(const std::vector<std::string>& model_paths,
                                       const std::vector<std::string>& model_dirs);

}  // namespace spore::serve
