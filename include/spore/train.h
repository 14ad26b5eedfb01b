// Watching a training run: a progress line (ProgressReporter) and the loss curve (LossCurve) as
// CSV and as a self-contained SVG plot. Namespace spore::train, after MindSpore's
// mindspore.train, where its LossMonitor and TimeMonitor live.
//
// NOTE [Progress output]
// On a terminal, one line is rewritten in place with '\r' (padded with spaces over the previous,
// longer line; no escape codes), at most every redraw_interval_s (default 0.1 s: about ten
// redraws a second however fast the steps are), and always for the last step. Anywhere else (a
// log file, a pipe, CI) '\r' would turn into one enormous line, so a plain line is written every
// log_every steps (default: every 10% of total_steps) and for the last step. Both show
//   step 30/100 (30%)  loss 0.4213  12.5 steps/s  ETA 0:05
// The rate is steps completed since the reporter was made over the time since then (slow
// steps show as "2.50 s/step"); the ETA is the remaining steps at that rate. With total_steps
// unknown (0), there is no percentage and no ETA. The clock and the terminal test are options,
// so tests can drive both modes with a fake clock.
//
// NOTE [Non-finite losses in plots]
// A diverged run records NaN or inf losses, and a log-scale axis cannot show values <= 0. Such
// points stay in the CSV exactly ("nan", "inf", "-inf") but are left out of the SVG: the line
// joins the drawable points on either side, and the plot says in a note under the title how many
// points were left out and why, so a gap is never silent.
#pragma once
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace spore::train {

// ---- progress (NOTE [Progress output]) ----------------------------------------------------------
struct ProgressOptions {
  // Non-terminal output: a line every log_every steps; 0 picks 10% of total_steps (at least 1),
  // or every 100 steps when total_steps is unknown.
  int64_t log_every = 0;
  // Terminal output: the least time between two redraws, in seconds.
  double redraw_interval_s = 0.1;
  // Whether the output is a terminal; unset: isatty() of the stream (std::cout, std::cerr and
  // std::clog map to their file descriptors, any other std::ostream is not a terminal).
  std::optional<bool> is_terminal;
  // Seconds on a monotonic clock; unset: std::chrono::steady_clock.
  std::function<double()> clock;
  // Put in front of every line ("train", "epoch 3"); empty for none.
  std::string label;
};

class ProgressReporter {
 public:
  explicit ProgressReporter(int64_t total_steps, std::ostream& out = std::cerr,
                            ProgressOptions options = {});
  ProgressReporter(int64_t total_steps, std::FILE* out, ProgressOptions options = {});
  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;
  // Prints the summary if finish() was not called; while an exception unwinds, only ends the line.
  ~ProgressReporter();

  // Step `step` (counted from 1; at most total_steps when that is known) finished with `loss`.
  // Steps must not go backwards (kValue).
  void update(int64_t step, double loss);
  // Draws the last state if it was not shown, ends the progress line, and prints
  //   done: 100 steps in 0:08 (12.5 steps/s), final loss 0.0213
  // Further calls do nothing.
  void finish();

  bool is_terminal() const { return terminal_; }
  int64_t total_steps() const { return total_; }
  // The line as it would be shown now for the last update (for callers with their own output).
  std::string status_line() const;

 private:
  void write(const std::string& text);
  void draw();
  double now() const;

  int64_t total_;
  std::ostream* os_ = nullptr;
  std::FILE* file_ = nullptr;
  ProgressOptions opt_;
  bool terminal_ = false;
  int64_t every_ = 1;
  double start_ = 0, last_draw_ = 0;
  int64_t step_ = 0, drawn_step_ = -1, logged_step_ = -1;
  double loss_ = 0;
  size_t line_width_ = 0;  // of the line on screen (terminal mode), to blank it out
  bool finished_ = false;
  int uncaught_ = 0;  // std::uncaught_exceptions() when made: the destructor's "unwinding?" test
};

// "0:05", "12:34", "1:02:03".
std::string format_duration(double seconds);

// ---- loss curves (NOTE [Non-finite losses in plots]) --------------------------------------------
struct SvgOptions {
  bool log_y = false;  // losses often span decades
  int width = 800;
  int height = 480;
  // Extra series recorded with the loss (e.g. "val_loss") drawn on the same axes, with a legend.
  std::vector<std::string> series;
};

class LossCurve {
 public:
  struct Point {
    int64_t step;
    double loss;
    std::map<std::string, double> extra;
  };

  void record(int64_t step, double loss, const std::map<std::string, double>& extra = {});
  const std::vector<Point>& points() const { return points_; }
  size_t size() const { return points_.size(); }
  bool empty() const { return points_.empty(); }
  // Names of the extra values, in the order they were first recorded.
  const std::vector<std::string>& extra_names() const { return extra_names_; }

  // "step,loss[,extra...]" then one row per point; an extra a point lacks is an empty cell;
  // values in the shortest text that reads back exactly; non-finite as nan, inf, -inf.
  std::string to_csv() const;
  void write_csv(const std::filesystem::path& path) const;  // atomically (NOTE [Atomic writes])
  // A self-contained SVG line plot: axes, tick labels, title, the loss (and opts.series).
  std::string to_svg(const std::string& title, const SvgOptions& opts = {}) const;
  void write_svg(const std::filesystem::path& path, const std::string& title,
                 const SvgOptions& opts = {}) const;

 private:
  std::vector<Point> points_;
  std::vector<std::string> extra_names_;
};

}  // namespace spore::train
