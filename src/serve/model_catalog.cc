// --model / --models -> named model sources (NOTE [Many models]).
#include "serve/model_catalog.h"

#include <algorithm>
#include <map>

#include "spore/error.h"
#include "spore/gguf.h"

namespace spore::serve {

namespace fs = std::filesystem;

namespace {

bool has_gguf(const fs::path& dir, fs::path* first = nullptr, int* count = nullptr) {
  std::error_code ec;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.path().extension() != ".gguf") continue;
    if (first && n == 0) *first = e.path();
    ++n;
  }
  if (count) *count = n;
  return n > 0;
}

// llama.cpp's LoRA adapter files (general.type = "adapter") are not models: --lora takes them.
// An unreadable file is kept, so loading it names the problem.
bool is_adapter(const fs::path& gguf) {
  try {
    const GgufFile f(gguf);
    return f.contains("general.type") && f.get_string("general.type") == "adapter";
  } catch (const std::exception&) {
    return false;
  }
}

// A name a request can carry and a person can read: no path separators, no control bytes, not
// "." or "..". (Names are never joined to a path; this keeps /v1/models and logs unambiguous.)
void check_name(const std::string& name, const fs::path& path) {
  bool ok = !name.empty() && name != "." && name != "..";
  for (unsigned char c : name)
    if (c == '/' || c == '\\' || c < 0x20 || c == 0x7f) ok = false;
  if (!ok)
    throw Error(ErrorCode::kValue, "spore serve: " + path.string() + " would be served as '" + name +
                                       "', which is not a usable model name (no '/', '\\' or control characters); "
                                       "rename the file or directory");
}

void add(std::vector<ModelSource>& out, std::map<std::string, fs::path>& seen, ModelSource s) {
  check_name(s.name, s.path);
  if (auto it = seen.find(s.name); it != seen.end())
    throw Error(ErrorCode::kValue, "spore serve: two models would be served as '" + s.name + "': " + it->second.string() +
                                       " and " + s.path.string() + " (names are file stems and directory names); "
                                       "rename one, or serve only one of them");
  seen.emplace(s.name, s.path);
  out.push_back(std::move(s));
}

}  // namespace

std::string model_name_for_path(const fs::path& path) {
  fs::path p = path;
  if (!p.has_filename()) p = p.parent_path();  // "dir/" names the directory
  std::error_code ec;
  if (fs::is_directory(p, ec)) {
    fs::path gguf;
    int n = 0;
    if (!fs::exists(p / "config.json", ec) && has_gguf(p, &gguf, &n) && n == 1) return gguf.stem().string();
    return p.filename().string();
  }
  return p.stem().string();
}

std::vector<ModelSource> models_in_directory(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec))
    throw Error(ErrorCode::kIO, "spore serve: --models " + dir.string() + " is not a readable directory; name the folder "
                                "that holds the .gguf files and Hugging Face model directories");
  std::vector<ModelSource> found;
  fs::directory_iterator it(dir, ec), end;
  if (ec) throw Error(ErrorCode::kIO, "spore serve: cannot read --models " + dir.string() + ": " + ec.message());
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error(ErrorCode::kIO, "spore serve: cannot read --models " + dir.string() + ": " + ec.message());
    const fs::path p = it->path();
    const std::string file = p.filename().string();
    if (file.empty() || file[0] == '.') continue;
    std::error_code e2;
    if (fs::is_regular_file(p, e2) && p.extension() == ".gguf") {
      if (is_adapter(p)) continue;
      found.push_back({p.stem().string(), p});
    } else if (fs::is_directory(p, e2) && (fs::exists(p / "config.json", e2) || has_gguf(p))) {
      found.push_back({file, p});
    }
  }
  std::sort(found.begin(), found.end(), [](const ModelSource& a, const ModelSource& b) { return a.name < b.name; });
  std::vector<ModelSource> out;
  std::map<std::string, fs::path> seen;
  for (ModelSource& s : found) add(out, seen, std::move(s));
  if (out.empty())
    throw Error(ErrorCode::kValue, "spore serve: --models " + dir.string() + " holds no model (no .gguf file, no "
                                   "directory with a config.json or a .gguf); put models there or use --model PATH");
  return out;
}

std::vector<ModelSource> model_catalog(const std::vector<std::string>& model_paths,
                                       const std::vector<std::string>& model_dirs) {
  std::vector<ModelSource> out;
  std::map<std::string, fs::path> seen;
  for (const std::string& p : model_paths) add(out, seen, {model_name_for_path(p), fs::path(p)});
  for (const std::string& d : model_dirs)
    for (ModelSource& s : models_in_directory(d)) add(out, seen, std::move(s));
  return out;
}

}  // namespace spore::serve
