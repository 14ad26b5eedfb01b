// The smallest front end to llama.cpp's own quantiser: llama_model_quantize() from libllama, the
// function the llama-quantize tool calls after parsing its arguments, with the library's default
// parameters and the file type named on the command line. Built by tools/make_quant_fixtures.py
// when the llama-quantize target itself (which drags in llama.cpp's whole common library) is not
// there. Usage: llama_quantize_driver IN.gguf OUT.gguf FTYPE (Q2_K, Q3_K_M, Q4_K_M, ...).
#include <cstdio>
#include <cstring>

#include "llama.h"

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s IN.gguf OUT.gguf FTYPE\n", argv[0]);
    return 2;
  }
  struct Named {
    const char* name;
    llama_ftype ftype;
  };
  const Named types[] = {
      {"Q4_0", LLAMA_FTYPE_MOSTLY_Q4_0},     {"Q4_1", LLAMA_FTYPE_MOSTLY_Q4_1},
      {"Q5_0", LLAMA_FTYPE_MOSTLY_Q5_0},     {"Q5_1", LLAMA_FTYPE_MOSTLY_Q5_1},
      {"Q8_0", LLAMA_FTYPE_MOSTLY_Q8_0},     {"Q2_K", LLAMA_FTYPE_MOSTLY_Q2_K},
      {"Q3_K_S", LLAMA_FTYPE_MOSTLY_Q3_K_S}, {"Q3_K_M", LLAMA_FTYPE_MOSTLY_Q3_K_M},
      {"Q4_K_S", LLAMA_FTYPE_MOSTLY_Q4_K_S}, {"Q4_K_M", LLAMA_FTYPE_MOSTLY_Q4_K_M},
      {"Q5_K_S", LLAMA_FTYPE_MOSTLY_Q5_K_S}, {"Q5_K_M", LLAMA_FTYPE_MOSTLY_Q5_K_M},
      {"Q6_K", LLAMA_FTYPE_MOSTLY_Q6_K},     {"IQ4_NL", LLAMA_FTYPE_MOSTLY_IQ4_NL},
      {"IQ4_XS", LLAMA_FTYPE_MOSTLY_IQ4_XS}, {"TQ1_0", LLAMA_FTYPE_MOSTLY_TQ1_0},
      {"TQ2_0", LLAMA_FTYPE_MOSTLY_TQ2_0},
  };
  llama_model_quantize_params p = llama_model_quantize_default_params();
  bool found = false;
  for (const Named& t : types)
    if (std::strcmp(t.name, argv[3]) == 0) p.ftype = t.ftype, found = true;
  if (!found) {
    std::fprintf(stderr, "unknown file type %s\n", argv[3]);
    return 2;
  }
  llama_backend_init();
  const uint32_t rc = llama_model_quantize(argv[1], argv[2], &p);
  llama_backend_free();
  return rc == 0 ? 0 : 1;
}
