// LossCurve: recorded losses as CSV and as a self-contained SVG line plot (NOTE [Non-finite
// losses in plots] in include/spore/train.h).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "spore/error.h"
#include "spore/format.h"
#include "spore/train.h"

namespace spore::train {
namespace {

// Shortest text that reads back as the same double; non-finite values spelled as numpy does.
std::string number_text(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

// RFC 4180: a field with a comma, quote or line break is quoted, quotes doubled.
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\r\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// 1, 2 or 5 times a power of ten, near `raw`: tick spacings a reader can add up in their head.
double nice_step(double raw) {
  if (!(raw > 0)) return 1;
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  double m = raw / p;
  return (m < 1.5 ? 1 : m < 3.5 ? 2 : m < 7.5 ? 5 : 10) * p;
}

struct Axis {
  double lo, hi;              // in plot space (log10 of the value on a log axis)
  std::vector<double> ticks;  // in plot space
  std::vector<std::string> labels;
};

// A linear axis covering [lo, hi], widened to whole tick steps.
Axis linear_axis(double lo, double hi, bool integer) {
  if (hi <= lo) {
    double pad = lo != 0 ? std::abs(lo) * 0.1 : 1;
    lo -= pad;
    hi += pad;
  }
  double step = nice_step((hi - lo) / 5);
  if (integer) step = std::max(step, 1.0);
  Axis a{std::floor(lo / step) * step, std::ceil(hi / step) * step, {}, {}};
  for (double t = a.lo; t <= a.hi + step * 1e-9; t += step) {
    double v = std::abs(t) < step * 1e-9 ? 0 : t;  // no "-0" or "1e-17" labels
    a.ticks.push_back(v);
    a.labels.push_back(fmt("%.6g", v));
  }
  return a;
}

// A log10 axis over whole decades; within one or two decades also 2x and 5x ticks.
Axis log_axis(double lo, double hi) {
  Axis a{std::floor(lo), std::ceil(hi), {}, {}};
  if (a.hi <= a.lo) a.hi = a.lo + 1;
  int decades = (int)(a.hi - a.lo);
  int stride = std::max(1, (decades + 7) / 8);
  for (int d = (int)a.lo; d <= (int)a.hi; d += stride) {
    a.ticks.push_back(d);
    a.labels.push_back(fmt("%g", std::pow(10.0, d)));
    if (decades <= 2 && d < (int)a.hi)
      for (double m : {2.0, 5.0}) {
        a.ticks.push_back(d + std::log10(m));
        a.labels.push_back(fmt("%g", m * std::pow(10.0, d)));
      }
  }
  return a;
}

const char* kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"};

}  // namespace

void LossCurve::record(int64_t step, double loss, const std::map<std::string, double>& extra) {
  for (const auto& [name, v] : extra) {
    if (name.empty() || name == "step" || name == "loss")
      throw Error(ErrorCode::kValue, "LossCurve::record: the extra value name '" + name +
                                         "' is empty or clashes with the step/loss columns; "
                                         "pick another name");
    if (std::find(extra_names_.begin(), extra_names_.end(), name) == extra_names_.end())
      extra_names_.push_back(name);
  }
  points_.push_back({step, loss, extra});
}

std::string LossCurve::to_csv() const {
  std::string s = "step,loss";
  // (Appended piece by piece: GCC 12 warns falsely, -Wrestrict, about "," + std::string&&.)
  for (const auto& n : extra_names_) s.append(",").append(csv_field(n));
  s += "\n";
  for (const Point& p : points_) {
    s += std::to_string(p.step) + "," + number_text(p.loss);
    for (const auto& n : extra_names_) {
      auto it = p.extra.find(n);
      s += ',';
      if (it != p.extra.end()) s += number_text(it->second);
    }
    s += "\n";
  }
  return s;
}

void LossCurve::write_csv(const std::filesystem::path& path) const {
  std::string s = to_csv();
  atomic_write_file(path,
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

std::string LossCurve::to_svg(const std::string& title, const SvgOptions& opts) const {
  if (opts.width < 200 || opts.height < 150)
    throw Error(ErrorCode::kValue,
                "LossCurve::to_svg: a " + std::to_string(opts.width) + "x" +
                    std::to_string(opts.height) +
                    " plot is too small for axes and labels; use at least 200x150");
  for (const auto& n : opts.series)
    if (std::find(extra_names_.begin(), extra_names_.end(), n) == extra_names_.end()) {
      std::string known;
      for (const auto& k : extra_names_) known += (known.empty() ? "" : ", ") + k;
      throw Error(ErrorCode::kValue,
                  "LossCurve::to_svg: no recorded value named '" + n + "'; recorded: " +
                      (known.empty() ? std::string("none besides the loss") : known));
    }

  // The drawable points of every series, in plot space (NOTE [Non-finite losses in plots]).
  struct Series {
    std::string name;
    std::vector<std::pair<double, double>> xy;
    size_t left_out = 0;
  };
  std::vector<Series> series;
  series.push_back({"loss", {}, 0});
  for (const auto& n : opts.series) series.push_back({n, {}, 0});
  for (const Point& p : points_) {
    for (size_t i = 0; i < series.size(); ++i) {
      double v;
      if (i == 0) {
        v = p.loss;
      } else {
        auto it = p.extra.find(series[i].name);
        if (it == p.extra.end()) continue;  // not recorded at this step: nothing left out
        v = it->second;
      }
      if (!std::isfinite(v) || (opts.log_y && v <= 0)) {
        ++series[i].left_out;
        continue;
      }
      series[i].xy.emplace_back((double)p.step, opts.log_y ? std::log10(v) : v);
    }
  }
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  size_t drawable = 0, left_out = 0;
  for (const Series& s : series) {
    left_out += s.left_out;
    drawable += s.xy.size();
    for (auto [x, y] : s.xy) {
      x0 = std::min(x0, x), x1 = std::max(x1, x);
      y0 = std::min(y0, y), y1 = std::max(y1, y);
    }
  }
  if (drawable == 0) x0 = 0, x1 = 1, y0 = opts.log_y ? -1 : 0, y1 = opts.log_y ? 0 : 1;
  Axis ax = linear_axis(x0, x1, /*integer=*/true);
  Axis ay = opts.log_y ? log_axis(y0, y1) : linear_axis(y0, y1, false);

  const double W = opts.width, H = opts.height;
  const double left = 78, right = 24, top = 58, bottom = 52;
  const double pw = W - left - right, ph = H - top - bottom;
  auto px = [&](double x) { return left + (x - ax.lo) / (ax.hi - ax.lo) * pw; };
  auto py = [&](double y) { return top + ph - (y - ay.lo) / (ay.hi - ay.lo) * ph; };

  std::string s;
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(opts.width) +
       "\" height=\"" + std::to_string(opts.height) + "\" viewBox=\"0 0 " +
       std::to_string(opts.width) + " " + std::to_string(opts.height) +
       "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.1f", W / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">" +
       xml_escape(title) + "</text>\n";
  std::string note;
  if (drawable == 0) note = "no drawable values recorded";
  if (left_out > 0)
    note += (note.empty() ? "" : "; ") + std::to_string(left_out) + " point(s) not drawn (" +
            (opts.log_y ? "NaN, infinite or <= 0 on a log axis" : "NaN or infinite") + ")";
  if (!note.empty())
    s += "<text class=\"note\" x=\"" + fmt("%.1f", W / 2) +
         "\" y=\"42\" text-anchor=\"middle\" fill=\"#a00\">" + xml_escape(note) + "</text>\n";

  // Grid and tick labels.
  for (size_t i = 0; i < ax.ticks.size(); ++i) {
    std::string x = fmt("%.2f", px(ax.ticks[i]));
    s += "<line x1=\"" + x + "\" y1=\"" + fmt("%.2f", top) + "\" x2=\"" + x + "\" y2=\"" +
         fmt("%.2f", top + ph) + "\" stroke=\"#e4e4e4\"/>\n";
    s += "<text x=\"" + x + "\" y=\"" + fmt("%.2f", top + ph + 18) + "\" text-anchor=\"middle\">" +
         xml_escape(ax.labels[i]) + "</text>\n";
  }
  for (size_t i = 0; i < ay.ticks.size(); ++i) {
    std::string y = fmt("%.2f", py(ay.ticks[i]));
    s += "<line x1=\"" + fmt("%.2f", left) + "\" y1=\"" + y + "\" x2=\"" + fmt("%.2f", left + pw) +
         "\" y2=\"" + y + "\" stroke=\"#e4e4e4\"/>\n";
    s += "<text x=\"" + fmt("%.2f", left - 6) + "\" y=\"" + y +
         "\" text-anchor=\"end\" dominant-baseline=\"middle\">" + xml_escape(ay.labels[i]) +
         "</text>\n";
  }
  // Axes and their names.
  s += "<line x1=\"" + fmt("%.2f", left) + "\" y1=\"" + fmt("%.2f", top + ph) + "\" x2=\"" +
       fmt("%.2f", left + pw) + "\" y2=\"" + fmt("%.2f", top + ph) + "\" stroke=\"black\"/>\n";
  s += "<line x1=\"" + fmt("%.2f", left) + "\" y1=\"" + fmt("%.2f", top) + "\" x2=\"" +
       fmt("%.2f", left) + "\" y2=\"" + fmt("%.2f", top + ph) + "\" stroke=\"black\"/>\n";
  s += "<text x=\"" + fmt("%.1f", left + pw / 2) + "\" y=\"" + fmt("%.1f", H - 10) +
       "\" text-anchor=\"middle\">step</text>\n";
  s += "<text x=\"16\" y=\"" + fmt("%.1f", top + ph / 2) +
       "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " + fmt("%.1f", top + ph / 2) + ")\">" +
       (opts.log_y ? "loss (log scale)" : "loss") + "</text>\n";

  // The series, then a legend when there is more than one.
  for (size_t i = 0; i < series.size(); ++i) {
    const char* color = kColors[i % (sizeof kColors / sizeof kColors[0])];
    std::string pts;
    for (auto [x, y] : series[i].xy) {
      if (!pts.empty()) pts += ' ';
      pts.append(fmt("%.2f", px(x))).append(",").append(fmt("%.2f", py(y)));
    }
    s += "<polyline class=\"series\" data-name=\"" + xml_escape(series[i].name) +
         "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"1.5\" points=\"" + pts +
         "\"/>\n";
    if (series[i].xy.size() == 1)  // a one-point line is invisible: mark the point
      s += "<circle cx=\"" + fmt("%.2f", px(series[i].xy[0].first)) + "\" cy=\"" +
           fmt("%.2f", py(series[i].xy[0].second)) + "\" r=\"3\" fill=\"" + color + "\"/>\n";
  }
  if (series.size() > 1) {
    // A white box under the legend, so that grid lines and the curves do not run through it.
    s += "<rect x=\"" + fmt("%.1f", left + pw - 138) + "\" y=\"" + fmt("%.1f", top + 2) +
         "\" width=\"132\" height=\"" + fmt("%.1f", 16 * (double)series.size() + 4) +
         "\" fill=\"white\" fill-opacity=\"0.85\" stroke=\"#ccc\"/>\n";
    for (size_t i = 0; i < series.size(); ++i) {
      const char* color = kColors[i % (sizeof kColors / sizeof kColors[0])];
      double y = top + 12 + 16 * (double)i, x = left + pw - 130;
      s += "<line x1=\"" + fmt("%.1f", x) + "\" y1=\"" + fmt("%.1f", y) + "\" x2=\"" +
           fmt("%.1f", x + 20) + "\" y2=\"" + fmt("%.1f", y) + "\" stroke=\"" + color +
           "\" stroke-width=\"2\"/>\n";
      s += "<text x=\"" + fmt("%.1f", x + 26) + "\" y=\"" + fmt("%.1f", y) +
           "\" dominant-baseline=\"middle\">" + xml_escape(series[i].name) + "</text>\n";
    }
  }
  s += "</svg>\n";
  return s;
}

void LossCurve::write_svg(const std::filesystem::path& path, const std::string& title,
                          const SvgOptions& opts) const {
  std::string s = to_svg(title, opts);
  atomic_write_file(path,
                    std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(s.data()), s.size()));
}

}  // namespace spore::train
