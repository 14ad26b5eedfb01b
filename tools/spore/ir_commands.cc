// spore ir info FILE | spore ir convert FILE --to-version N [--out OUT] (NOTE [Model IR]).
#include <cstdio>
#include <map>
#include <memory>
#include <string>

#include "commands.h"
#include "spore/format.h"
#include "spore/ir.h"

namespace spore::cli {
namespace {

std::string dims_text(const ir::Value& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.dims.size(); ++i)
    s += (i ? ", " : "") + (v.dims[i].symbolic() ? v.dims[i].symbol : std::to_string(v.dims[i].extent));
  return s + "]";
}

void print_signature(const char* what, const ir::Graph& g, const std::vector<uint32_t>& ids) {
  for (uint32_t id : ids) {
    const ir::Value& v = g.values[id];
    std::printf("%-10s %-16s %-9s %s\n", what, v.name.empty() ? ("%" + std::to_string(id)).c_str() : v.name.c_str(),
                dtype_name(v.dtype), dims_text(v).c_str());
  }
}

int info(const std::string& path) {
  const uint32_t version = ir::peek_version(path);
  std::printf("file       %s\nsha256     %s\nir version %u (this build reads %u to %u)\n", path.c_str(),
              sha256_file(path).c_str(), version, ir::kOldestVersion, ir::kNewestVersion);
  const ir::Model m = ir::read_model(path);
  std::printf("producer   %s %s\nop set     %u (this build: %d)\n", m.producer_name.c_str(), m.producer_version.c_str(),
              m.opset_version, kOpSetVersion);
  const auto [need, why] = ir::required_version(m);
  std::printf("needs      version %u%s%s\n", need, why.empty() ? "" : ": ", why.c_str());
  print_signature("input", m.graph, m.graph.inputs);
  print_signature("output", m.graph, m.graph.outputs);
  size_t params = 0, elements = 0, bytes = 0;
  std::map<std::string, int> ops;
  auto walk = [&](auto&& self, const ir::Graph& g) -> void {
    for (const ir::Value& v : g.values)
      if (v.data.defined()) {
        ++params;
        elements += (size_t)v.data.numel();
        bytes += v.data.nbytes();
      }
    for (const ir::Node& n : g.nodes) {
      ++ops[n.def->name];
      for (const ir::Graph& s : n.subgraphs) self(self, s);
    }
  };
  walk(walk, m.graph);
  std::printf("parameters %zu tensors, %zu elements, %zu bytes\nops       ", params, elements, bytes);
  for (const auto& [name, count] : ops) std::printf(" %s x%d", name.c_str(), count);
  std::printf("\n");
  for (const auto& [k, v] : m.metadata) std::printf("meta       %s = %s\n", k.c_str(), v.c_str());
  std::printf("checksum   ok (SHA-256 of the contents %s)\n", m.sha256.c_str());
  return 0;
}

}  // namespace

void add_ir_commands(CLI::App& app, Handlers& h) {
  auto* ir_cmd = add_command(app, "ir", "Inspect and convert Spore model IR files", "spore ir info model.spore");
  ir_cmd->require_subcommand(1);
  auto* info_cmd = add_command(*ir_cmd, "info", "Version, producer, op set, ops, signatures, parameters and SHA-256 of an IR file",
                               "spore ir info model.spore");
  auto file = std::make_shared<std::string>();
  info_cmd->add_option("FILE", *file, "IR file")->required();
  info_cmd->callback([&h, file] { h.action = [file] { return info(*file); }; });

  auto* convert = add_command(*ir_cmd, "convert", "Rewrite an IR file at another IR version (down-level where the graph allows)",
                              "spore ir convert model.spore --to-version 1 --out model-v1.spore");
  auto in = std::make_shared<std::string>();
  auto out = std::make_shared<std::string>();
  auto version = std::make_shared<uint32_t>(ir::kNewestVersion);
  convert->add_option("FILE", *in, "IR file")->required();
  convert->add_option("--to-version", *version, "IR version to write")->required();
  convert->add_option("--out", *out, "Where to write (default: replace FILE atomically)");
  convert->callback([&h, in, out, version] {
    h.action = [in, out, version] {
      const std::string dest = out->empty() ? *in : *out;
      ir::convert_model(*in, dest, *version);
      std::printf("wrote %s (IR version %u, sha256 %s)\n", dest.c_str(), *version, sha256_file(dest).c_str());
      return 0;
    };
  });
}

}  // namespace spore::cli
