// ProgressReporter with a fake clock in both output modes, and LossCurve's CSV and SVG (parsed
// back here: the SVG's structure and its point coordinates are checked against values computed
// from the recorded losses, not against a stored copy of the output).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <regex>
#include <sstream>

#include "spore/error.h"
#include "spore/train.h"

namespace spore::train {
namespace {

struct FakeClock {
  double t = 100.0;  // any origin: only differences matter
  std::function<double()> fn() {
    return [this] { return t; };
  }
};

ProgressOptions options(FakeClock& clock, bool terminal) {
  ProgressOptions o;
  o.clock = clock.fn();
  o.is_terminal = terminal;
  return o;
}

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

TEST(Progress, FormatDuration) {
  EXPECT_EQ(format_duration(0), "0:00");
  EXPECT_EQ(format_duration(5.4), "0:05");
  EXPECT_EQ(format_duration(754), "12:34");
  EXPECT_EQ(format_duration(3723), "1:02:03");
  EXPECT_EQ(format_duration(std::numeric_limits<double>::infinity()), "?");
  EXPECT_EQ(format_duration(-1), "?");
}

TEST(Progress, LogLinesEveryTenPercentWhenNotATerminal) {
  FakeClock clock;
  std::ostringstream out;
  {
    ProgressReporter p(100, out, options(clock, false));
    EXPECT_FALSE(p.is_terminal());
    for (int s = 1; s <= 100; ++s) {
      clock.t += 0.5;  // 2 steps/s
      p.update(s, 1.0 / s);
    }
    p.finish();
  }
  std::vector<std::string> l = lines_of(out.str());
  ASSERT_EQ(l.size(), 11u) << out.str();  // steps 10, 20, ..., 100 and the summary
  EXPECT_EQ(out.str().find('\r'), std::string::npos);
  // Step 30: 15 s elapsed, 2.0 steps/s, 70 steps left -> 35 s.
  EXPECT_EQ(l[2], "step 30/100 (30%)  loss 0.03333  2.0 steps/s  ETA 0:35");
  EXPECT_EQ(l[9], "step 100/100 (100%)  loss 0.01  2.0 steps/s  ETA 0:00");
  EXPECT_EQ(l[10], "done: 100 steps in 0:50 (2.0 steps/s), final loss 0.01");
}

TEST(Progress, LastStepAndExplicitIntervalWhenNotATerminal) {
  FakeClock clock;
  std::ostringstream out;
  ProgressOptions o = options(clock, false);
  o.log_every = 4;
  o.label = "epoch 2";
  ProgressReporter p(10, out, o);
  for (int s = 1; s <= 10; ++s) {
    clock.t += 4;  // slow steps: shown as seconds per step
    p.update(s, 2.5);
  }
  p.finish();
  p.finish();  // once only
  std::vector<std::string> l = lines_of(out.str());
  ASSERT_EQ(l.size(), 4u) << out.str();  // 4, 8, 10 (last), summary
  EXPECT_EQ(l[0], "epoch 2  step 4/10 (40%)  loss 2.5  4.00 s/step  ETA 0:24");
  EXPECT_EQ(l[2].rfind("epoch 2  step 10/10 (100%)", 0), 0u) << l[2];
  EXPECT_EQ(l[3], "epoch 2  done: 10 steps in 0:40 (4.00 s/step), final loss 2.5");
}

TEST(Progress, FinishLogsAnUnshownLastStepAndUnknownTotal) {
  FakeClock clock;
  std::ostringstream out;
  ProgressReporter p(0, out, options(clock, false));  // total unknown: every 100 steps
  for (int s = 1; s <= 150; ++s) {
    clock.t += 0.1;
    p.update(s, 0.25);
  }
  p.finish();
  std::vector<std::string> l = lines_of(out.str());
  ASSERT_EQ(l.size(), 3u) << out.str();
  EXPECT_EQ(l[0], "step 100  loss 0.25  10.0 steps/s");
  EXPECT_EQ(l[1], "step 150  loss 0.25  10.0 steps/s");
  EXPECT_EQ(l[2], "done: 150 steps in 0:15 (10.0 steps/s), final loss 0.25");
}

// Terminal mode: the frames between '\r's are the successive contents of the one line. Steps
// take 1/1024 s (exact in binary, so the 0.1 s redraw boundary falls where computed).
TEST(Progress, TerminalRewritesOneLineAtMostTenTimesASecond) {
  FakeClock clock;
  std::ostringstream out;
  ProgressReporter p(1000, out, options(clock, true));
  EXPECT_TRUE(p.is_terminal());
  for (int s = 1; s <= 1000; ++s) {
    clock.t += 1.0 / 1024;
    p.update(s, s == 1 ? 12345.678 : 0.5);
  }
  p.finish();
  std::string text = out.str();
  std::vector<std::string> l = lines_of(text);
  ASSERT_EQ(l.size(), 2u) << text;  // the progress line, ended once, and the summary
  std::vector<std::string> frames;
  std::stringstream in(l[0]);
  for (std::string f; std::getline(in, f, '\r');)
    if (!f.empty()) frames.push_back(f);
  // Drawn at step 1, then whenever 0.1 s (103 steps of 1/1024 s) have passed since the last
  // draw: steps 104, 207, ..., 928; and the last step: 11 frames for 1000 updates.
  ASSERT_EQ(frames.size(), 11u) << text;
  EXPECT_EQ(frames[0], "step 1/1000 (0%)  loss 1.235e+04  1024.0 steps/s  ETA 0:01");
  // A shorter frame blanks out the rest of the longer one before it.
  EXPECT_EQ(frames[1], "step 104/1000 (10%)  loss 0.5  1024.0 steps/s  ETA 0:01" +
                           std::string(frames[0].size() - 55, ' '));
  EXPECT_EQ(frames[9].substr(0, 9), "step 928/");
  EXPECT_EQ(frames.back(), "step 1000/1000 (100%)  loss 0.5  1024.0 steps/s  ETA 0:00");
  EXPECT_EQ(l[1], "done: 1000 steps in 0:01 (1024.0 steps/s), final loss 0.5");
}

TEST(Progress, TerminalFinishDrawsTheLastStateAndFileOutputWorks) {
  FakeClock clock;
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  {
    ProgressReporter p(50, f, options(clock, true));
    p.update(1, 3.0);
    clock.t += 0.01;
    p.update(2, 2.0);  // within 0.1 s: not drawn
  }                    // the destructor finishes: draws step 2, ends the line, prints the summary
  std::rewind(f);
  std::string text;
  for (int c; (c = std::fgetc(f)) != EOF;) text += (char)c;
  std::fclose(f);
  EXPECT_NE(text.find("\rstep 1/50 (2%)  loss 3"), std::string::npos) << text;
  EXPECT_NE(text.find("\rstep 2/50 (4%)  loss 2  200.0 steps/s  ETA 0:00"), std::string::npos)
      << text;
  EXPECT_NE(text.find("\ndone: 2 steps in 0:00 (200.0 steps/s), final loss 2\n"), std::string::npos)
      << text;
}

TEST(Progress, UnwindingPrintsNoSummaryAndBadInputsAreErrors) {
  FakeClock clock;
  std::ostringstream out;
  try {
    ProgressReporter p(10, out, options(clock, true));
    p.update(1, 1.0);
    throw std::runtime_error("training failed");
  } catch (const std::runtime_error&) {
  }
  EXPECT_EQ(out.str().find("done"), std::string::npos) << out.str();
  EXPECT_EQ(out.str().back(), '\n');

  ProgressReporter p(10, out, options(clock, false));
  p.update(5, 1.0);
  EXPECT_THROW(p.update(4, 1.0), Error);
  EXPECT_THROW(ProgressReporter(-1, out), Error);
  p.update(6, std::nan(""));  // a diverged loss is shown, not an error
  EXPECT_NE(p.status_line().find("loss nan"), std::string::npos) << p.status_line();
}

// ---- LossCurve
// -----------------------------------------------------------------------------------
std::string slurp(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

std::filesystem::path temp_path(const std::string& name) {
  return std::filesystem::temp_directory_path() /
         ("spore_progress_" + std::to_string(::getpid()) + "_" + name);
}

TEST(LossCurve, CsvHasHeaderRowsAndExactValues) {
  LossCurve c;
  c.record(1, 2.5);
  c.record(2, 0.1, {{"lr", 0.001}});
  c.record(3, std::nan(""), {{"val,loss", 1.0 / 3}});
  c.record(4, -std::numeric_limits<double>::infinity());
  std::string csv = c.to_csv();
  std::vector<std::string> l = lines_of(csv);
  ASSERT_EQ(l.size(), 5u) << csv;
  EXPECT_EQ(l[0], "step,loss,lr,\"val,loss\"");
  EXPECT_EQ(l[1], "1,2.5,,");
  EXPECT_EQ(l[2], "2,0.1,0.001,");
  EXPECT_EQ(l[3].substr(0, 6), "3,nan,");
  EXPECT_EQ(l[4], "4,-inf,,");
  // Values read back exactly.
  EXPECT_EQ(std::stod(l[3].substr(l[3].rfind(',') + 1)), 1.0 / 3);

  auto path = temp_path("curve.csv");
  c.write_csv(path);
  EXPECT_EQ(slurp(path), csv);
  std::filesystem::remove(path);
  EXPECT_THROW(c.record(5, 1, {{"loss", 2}}), Error);
}

// The minimal structure of the SVG and the coordinates of each polyline.
struct ParsedSvg {
  std::map<std::string, std::vector<std::pair<double, double>>> lines;  // by data-name
  std::vector<std::string> texts;
};
ParsedSvg parse_svg(const std::string& svg) {
  ParsedSvg out;
  EXPECT_EQ(svg.rfind("<svg ", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  // Every element opened is closed (self-closing or with its end tag): a crude well-formedness
  // test.
  int depth = 0;
  for (size_t i = 0; (i = svg.find('<', i)) != std::string::npos; ++i) {
    size_t e = svg.find('>', i);
    EXPECT_NE(e, std::string::npos);
    if (svg[i + 1] == '/')
      --depth;
    else if (svg[e - 1] != '/')
      ++depth;
    EXPECT_GE(depth, 0);
  }
  EXPECT_EQ(depth, 0);
  std::regex poly("<polyline [^>]*data-name=\"([^\"]*)\"[^>]*points=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), poly); it != std::sregex_iterator();
       ++it) {
    auto& pts = out.lines[(*it)[1]];
    std::istringstream in((*it)[2].str());
    for (std::string xy; in >> xy;) {
      size_t comma = xy.find(',');
      pts.emplace_back(std::stod(xy.substr(0, comma)), std::stod(xy.substr(comma + 1)));
    }
  }
  std::regex text("<text[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), text); it != std::sregex_iterator();
       ++it)
    out.texts.push_back((*it)[1]);
  return out;
}

SvgOptions log_scale() {
  SvgOptions o;
  o.log_y = true;
  return o;
}
SvgOptions with_series(const std::string& name) {
  SvgOptions o;
  o.series = {name};
  return o;
}
SvgOptions tiny() {
  SvgOptions o;
  o.width = 10;
  return o;
}

bool has_text(const ParsedSvg& p, const std::string& t) {
  return std::find(p.texts.begin(), p.texts.end(), t) != p.texts.end();
}

TEST(LossCurve, SvgPlotsEveryPointInOrder) {
  LossCurve c;
  for (int s = 0; s <= 40; ++s) c.record(s * 5, 3.0 * std::exp(-s / 10.0) + 0.1);
  std::string svg = c.to_svg("Training <loss> & more");
  ParsedSvg p = parse_svg(svg);
  ASSERT_EQ(p.lines.size(), 1u);
  const auto& pts = p.lines["loss"];
  ASSERT_EQ(pts.size(), 41u);
  // x grows with the step at a constant spacing; y (downwards in SVG) follows the loss, which
  // falls.
  double dx = pts[1].first - pts[0].first;
  EXPECT_GT(dx, 0);
  for (size_t i = 1; i < pts.size(); ++i) {
    EXPECT_NEAR(pts[i].first - pts[i - 1].first, dx, 0.02);
    EXPECT_GT(pts[i].second, pts[i - 1].second);
  }
  // Linear y: the drop in pixels is proportional to the drop in loss.
  double k = (pts[1].second - pts[0].second) / (c.points()[0].loss - c.points()[1].loss);
  for (size_t i = 2; i < pts.size(); ++i)
    EXPECT_NEAR(pts[i].second - pts[0].second, k * (c.points()[0].loss - c.points()[i].loss), 0.05);
  EXPECT_TRUE(has_text(p, "Training &lt;loss&gt; &amp; more"));
  EXPECT_TRUE(has_text(p, "step"));
  EXPECT_TRUE(has_text(p, "loss"));
  EXPECT_TRUE(has_text(p, "0"));    // x tick at the first step
  EXPECT_TRUE(has_text(p, "200"));  // and at the last
  EXPECT_EQ(svg.find("not drawn"), std::string::npos);

  auto path = temp_path("curve.svg");
  c.write_svg(path, "Training <loss> & more");
  EXPECT_EQ(slurp(path), svg);
  std::filesystem::remove(path);
}

TEST(LossCurve, LogScaleSpacesDecadesEvenly) {
  LossCurve c;
  for (int s = 0; s <= 4; ++s) c.record(s, std::pow(10.0, 1 - s));  // 10, 1, 0.1, 0.01, 0.001
  ParsedSvg p = parse_svg(c.to_svg("decades", log_scale()));
  const auto& pts = p.lines["loss"];
  ASSERT_EQ(pts.size(), 5u);
  double d = pts[1].second - pts[0].second;
  EXPECT_GT(d, 0);
  for (size_t i = 2; i < pts.size(); ++i) EXPECT_NEAR(pts[i].second - pts[i - 1].second, d, 0.02);
  for (const char* t : {"0.001", "0.01", "0.1", "1", "10"}) EXPECT_TRUE(has_text(p, t)) << t;
  EXPECT_TRUE(has_text(p, "loss (log scale)"));
}

TEST(LossCurve, NonFiniteLossesAreLeftOutAndCounted) {
  LossCurve c;
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> losses = {1.0, 0.5, std::nan(""), 0.25, inf, 0.0, -inf, 0.125};
  for (size_t i = 0; i < losses.size(); ++i) c.record((int64_t)i, losses[i]);

  ParsedSvg lin = parse_svg(c.to_svg("diverged"));
  EXPECT_EQ(lin.lines["loss"].size(), 5u);  // 1, 0.5, 0.25, 0, 0.125
  EXPECT_TRUE(has_text(lin, "3 point(s) not drawn (NaN or infinite)"));
  ParsedSvg log = parse_svg(c.to_svg("diverged", log_scale()));
  EXPECT_EQ(log.lines["loss"].size(), 4u);  // the 0 cannot be drawn on a log axis either
  EXPECT_TRUE(has_text(log, "4 point(s) not drawn (NaN, infinite or &lt;= 0 on a log axis)"));
  for (const auto& [x, y] : log.lines["loss"]) EXPECT_TRUE(std::isfinite(x) && std::isfinite(y));

  // Nothing drawable at all, or nothing recorded: still a valid plot with a note.
  LossCurve bad;
  bad.record(1, std::nan(""));
  ParsedSvg none = parse_svg(bad.to_svg("nothing"));
  EXPECT_EQ(none.lines["loss"].size(), 0u);
  EXPECT_TRUE(
      has_text(none, "no drawable values recorded; 1 point(s) not drawn (NaN or infinite)"));
  parse_svg(LossCurve().to_svg("empty", log_scale()));
}

TEST(LossCurve, ExtraSeriesGetTheirOwnLineAndLegend) {
  LossCurve c;
  for (int s = 1; s <= 10; ++s) {
    std::map<std::string, double> extra = {{"lr", 0.1}};
    if (s % 5 == 0) extra["val_loss"] = 2.0 / s;  // validation only every 5 steps
    c.record(s, 1.0 / s, extra);
  }
  ParsedSvg p = parse_svg(c.to_svg("train and val", with_series("val_loss")));
  EXPECT_EQ(p.lines["loss"].size(), 10u);
  EXPECT_EQ(p.lines["val_loss"].size(), 2u);
  EXPECT_TRUE(has_text(p, "val_loss"));                               // the legend
  EXPECT_EQ(p.lines["val_loss"][0].first, p.lines["loss"][4].first);  // same step, same x
  EXPECT_THROW(c.to_svg("x", with_series("nope")), Error);
  EXPECT_THROW(c.to_svg("x", tiny()), Error);
}

TEST(LossCurve, SinglePointAndFlatCurves) {
  LossCurve one;
  one.record(7, 0.3);
  std::string svg = one.to_svg("one");
  EXPECT_EQ(parse_svg(svg).lines["loss"].size(), 1u);
  EXPECT_NE(svg.find("<circle"), std::string::npos);
  LossCurve flat;
  for (int s = 0; s < 5; ++s) flat.record(s, 2.0);
  const auto parsed = parse_svg(flat.to_svg("flat"));  // named: the loop below reads into it
  ASSERT_EQ(parsed.lines.count("loss"), 1u);
  for (const auto& [x, y] : parsed.lines.at("loss")) EXPECT_TRUE(std::isfinite(y));
}

}  // namespace
}  // namespace spore::train
