// Linked against spore_format and spore_core only (NOTE [Format library]): if the format
// library referred to nn, autograd, optim or data, this program would not link. It also does a
// little real work with each part, so a stub library would not pass either.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "spore/format.h"
#include "spore/tensor.h"

namespace {
int fail(const std::string& what) {
  std::fprintf(stderr, "format_only_link: %s\n", what.c_str());
  return 1;
}
}  // namespace

int main() {
  using namespace spore;
  if (sha256_bytes(std::string_view("abc")) !=
      "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    return fail("sha256 of 'abc' is wrong");

  Tensor w = Tensor::from_vector<float>({1.5f, -2.0f, 3.25f, 4.0f}, Shape{2, 2});
  auto dir = std::filesystem::temp_directory_path() / ("spore_format_only_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  auto path = dir / "w.safetensors";
  save_safetensors(path, {{"w", w}});
  SafeTensors back = load_safetensors(path);
  if (back.at("w").to_vector<float>() != w.to_vector<float>()) return fail("safetensors round trip");

  SafeTensorsFile file(path);
  Tensor bytes = map_file(path);
  const SafeTensorInfo& info = file.info("w");
  Tensor view = view_bytes(bytes, file.data_offset() + info.begin, info.shape, info.dtype);
  if (view.to_vector<float>() != w.to_vector<float>()) return fail("mapped view differs");
  std::filesystem::remove_all(dir);
  std::puts("format_only_link: ok");
  return 0;
}
