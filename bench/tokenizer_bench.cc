// Tokenizer throughput, one thread: load time of a tokenizer and encode MB/s over a corpus file
// encoded line by line (as bench/tokenizer_bench.py encodes it with the peers). One round per
// run; the Python driver interleaves runs of this program with the peers and takes medians.
//   tokenizer_bench TOKENIZER CORPUS  ->  {"load_s", "encode_s", "load_cpu_s", "encode_cpu_s", "mb", "tokens"}
#include <chrono>
#include <ctime>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "spore/nlp/tokenizer.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: tokenizer_bench TOKENIZER CORPUS\n");
    return 2;
  }
  std::ifstream in(argv[2], std::ios::binary);
  std::vector<std::string> lines;
  size_t bytes = 0;
  for (std::string line; std::getline(in, line);) {
    line += '\n';
    bytes += line.size();
    lines.push_back(std::move(line));
  }
  using clock = std::chrono::steady_clock;
  // Wall time and this process's CPU time: the machine is shared, and CPU time is what a busy
  // neighbour does not inflate.
  const auto t0 = clock::now();
  const std::clock_t c0 = std::clock();
  const spore::nlp::Tokenizer tok = spore::nlp::Tokenizer::from_file(argv[1]);
  const auto t1 = clock::now();
  const std::clock_t c1 = std::clock();
  size_t tokens = 0;
  spore::nlp::EncodeOptions opt;
  opt.replace_invalid_utf8 = true;
  for (const std::string& line : lines) tokens += tok.encode(line, opt).size();
  const auto t2 = clock::now();
  const std::clock_t c2 = std::clock();
  std::printf("{\"load_s\": %.4f, \"encode_s\": %.4f, \"load_cpu_s\": %.4f, \"encode_cpu_s\": %.4f, "
              "\"mb\": %.4f, \"tokens\": %zu}\n",
              std::chrono::duration<double>(t1 - t0).count(),
              std::chrono::duration<double>(t2 - t1).count(), double(c1 - c0) / CLOCKS_PER_SEC,
              double(c2 - c1) / CLOCKS_PER_SEC, bytes / 1e6, tokens);
  return 0;
}
