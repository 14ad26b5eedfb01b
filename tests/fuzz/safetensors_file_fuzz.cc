// libFuzzer target: safetensors files through load_safetensors and the lazy SafeTensorsFile
// (src/io/safetensors_reader.cc), which read with positioned reads instead of from memory.
#include "fuzz_util.h"
#include "spore/error.h"
#include "spore/io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spore;
  const std::string path = fuzz::scratch_file(data, size, ".safetensors");
  try {
    SafeTensors st = load_safetensors(path);
    for (const auto& [name, t] : st.tensors) fuzz::require(t.nbytes() <= size, "a tensor larger than its file");
  } catch (const Error&) {
  }
  try {
    SafeTensorsFile f(path);
    fuzz::require(f.data_offset() <= f.file_size(), "a data buffer that starts past the file");
    for (const SafeTensorInfo& info : f.tensors()) {
      fuzz::require(f.data_offset() + info.end <= f.file_size(), "a tensor past the end of its file");
      (void)f.load(info.name);
    }
  } catch (const Error&) {
  }
  return 0;
}
