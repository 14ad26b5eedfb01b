// The main() of each standalone sample program: runs the sample(s) linked into it through the
// harness (each in a child process of this same program) and prints its figures and the summary
// table.
//   <sample> [--device D] [--timeout S] [--out DIR] [--<option> VALUE ...]
// Other options are the sample's own (e.g. --steps 200): they reach the sample, which runs in a
// child process, as environment variables (examples/common/sample_options.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/sample_options.h"
#include "spore/error.h"
#include "spore/probe.h"

int main(int argc, char** argv) {
  using namespace spore::probe;
  if (argc >= 2 && std::strcmp(argv[1], kChildCommand) == 0) return child_main_from_args(argc - 2, argv + 2);
  RunOptions opts;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--device" && i + 1 < argc) opts.device = argv[++i];
    else if (a == "--timeout" && i + 1 < argc) opts.timeout_s = std::atof(argv[++i]);
    else if (a == "--out" && i + 1 < argc) opts.out_dir = argv[++i];
    else if (a.size() > 2 && a.compare(0, 2, "--") == 0 && i + 1 < argc)
      setenv(spore::examples::sample_option_variable(a.substr(2)).c_str(), argv[++i], 1);
    else {
      std::fprintf(stderr, "usage: %s [--device D] [--timeout S] [--out DIR] [--<option> VALUE ...]\n",
                   argv[0]);
      return 2;
    }
  }
  std::vector<std::string> names;
  for (const auto* p : all_probes("sample")) names.push_back(p->name);
  try {
    RunSummary s = run_probes(names, opts, std::vector<std::string>(argv, argv + argc));
    std::fputs(show_run_with_figures(s.probe_reports, s.run_report).c_str(), stdout);
    return s.failed ? 1 : 0;
  } catch (const spore::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
