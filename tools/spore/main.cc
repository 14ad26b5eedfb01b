// spore: the command-line program. Thin subcommands over the libraries.
#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  std::fprintf(stderr, "usage: spore <command>\n");
  return argc > 1 ? 0 : 2;
}
