// The gate report (kind "gate", schemas/gate-report.schema.json; written by `spore gate`, NOTE
// [Machine gate]) on screen: a verdict per check, then the load figures beside the chapter's.
// `spore gate` prints this and `spore report show` reads the file back through it, so the two
// never disagree. Read through the checked helpers: a malformed report prints "-".
#include <cmath>
#include <cstdio>
#include <sstream>

#include "probe/json_read.h"
#include "spore/probe/report.h"

namespace spore::probe {

namespace {

using detail::elements;
using detail::field;
using detail::number_or;
using detail::string_or;

std::string fmt(const Json& j, const char* f) {
  const double x = number_or(j, NAN);
  if (!std::isfinite(x)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, f, x);
  return b;
}

}  // namespace

std::string format_gate_report(const Json& r) {
  std::ostringstream o;
  char line[512];
  o << "spore gate: " << string_or(field(r, "url"), "-") << ", model '" << string_or(field(r, "model")) << "'\n";
  std::snprintf(line, sizeof line, "  %-24s %-14s %s\n", "check", "verdict", "observed");
  o << line;
  int passed = 0, total = 0;
  for (const Json& c : elements(field(r, "checks"))) {
    const std::string v = string_or(field(c, "verdict"), "-");
    passed += v == "observed-pass";
    ++total;
    std::snprintf(line, sizeof line, "  %-24s %-14s %s\n", string_or(field(c, "name"), "-").c_str(), v.c_str(),
                  string_or(field(c, "reason")).substr(0, 200).c_str());
    o << line;
  }
  const Json& l = field(r, "load");
  const Json& ref = field(r, "reference");
  if (number_or(field(l, "requests"), 0) > 0) {
    o << "\nload: " << fmt(field(l, "requests"), "%.0f") << " streamed requests, " << fmt(field(l, "concurrency"), "%.0f")
      << " at a time, max_tokens " << fmt(field(l, "max_tokens"), "%.0f") << ", " << fmt(field(l, "completion_tokens"), "%.0f")
      << " tokens in " << fmt(field(l, "wall_s"), "%.2f") << " s, " << fmt(field(l, "failed"), "%.0f") << " failed\n";
    std::snprintf(line, sizeof line, "  %-34s %12s   %s\n", "", "this run", "chapter 5.11*");
    o << line;
    auto row = [&](const char* what, const char* key, const std::string& theirs, const char* f = "%.1f") {
      std::snprintf(line, sizeof line, "  %-34s %12s   %s\n", what, fmt(field(l, key), f).c_str(), theirs.c_str());
      o << line;
    };
    row("first token p50 (ms)", "ttft_p50_ms", fmt(field(ref, "ttft_p50_ms"), "%.1f"));
    row("first token p95 (ms)", "ttft_p95_ms", "-");
    row("total latency p50 (ms)", "total_p50_ms", fmt(field(ref, "total_p50_ms"), "%.1f"));
    row("total latency p95 (ms)", "total_p95_ms", "-");
    row("tokens/s per stream (p50)", "stream_tokens_per_s_p50", "about " + fmt(field(ref, "tokens_per_s"), "%.3f"), "%.2f");
    row("decode tokens/s per stream (p50)", "decode_tokens_per_s_p50", "-", "%.2f");
    row("aggregate tokens/s", "aggregate_tokens_per_s", "-", "%.2f");
    o << "  * a different machine and model: " << string_or(field(ref, "source"), "-") << ", on "
      << string_or(field(ref, "machine"), "-") << ";\n    one request at a time; a reference point, not a target.\n";
  }
  o << "\nverdict: " << string_or(field(r, "verdict"), "-") << " (" << passed << " of " << total
    << " checks observed-pass)\n";
  return o.str();
}

}  // namespace spore::probe
