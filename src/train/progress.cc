// ProgressReporter: the training progress line (NOTE [Progress output] in include/spore/train.h).
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <exception>

#include "spore/error.h"
#include "spore/train.h"

namespace spore::train {
namespace {

std::string printf_string(const char* fmt, double a) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, a);
  return buf;
}

// The standard streams are the only std::ostreams whose file descriptor is known.
bool ostream_is_terminal(const std::ostream& os) {
  if (&os == &std::cout) return ::isatty(STDOUT_FILENO) == 1;
  if (&os == &std::cerr || &os == &std::clog) return ::isatty(STDERR_FILENO) == 1;
  return false;
}

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  long long s = std::llround(seconds), h = s / 3600, m = s / 60 % 60, sec = s % 60;
  char buf[48];
  if (h > 0)
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", h, m, sec);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld", m, sec);
  return buf;
}

ProgressReporter::ProgressReporter(int64_t total_steps, std::ostream& out, ProgressOptions options)
    : total_(total_steps), os_(&out), opt_(std::move(options)) {
  terminal_ = opt_.is_terminal.value_or(ostream_is_terminal(out));
  if (total_ < 0)
    throw Error(ErrorCode::kValue, "ProgressReporter: total_steps is " + std::to_string(total_) +
                                       "; give the number of steps, or 0 when it is unknown");
  if (opt_.log_every < 0)
    throw Error(ErrorCode::kValue, "ProgressReporter: log_every is " +
                                       std::to_string(opt_.log_every) +
                                       "; give a positive step count, or 0 for every 10%");
  every_ = opt_.log_every > 0 ? opt_.log_every
           : total_ > 0       ? std::max<int64_t>(1, (total_ + 9) / 10)
                              : 100;
  start_ = last_draw_ = now();
  uncaught_ = std::uncaught_exceptions();
}

ProgressReporter::ProgressReporter(int64_t total_steps, std::FILE* out, ProgressOptions options)
    : ProgressReporter(total_steps, std::cerr, [&] {
        // Decided here, from the FILE's descriptor, before the delegated constructor looks.
        if (!options.is_terminal) options.is_terminal = out && ::isatty(::fileno(out)) == 1;
        return std::move(options);
      }()) {
  if (!out) throw Error(ErrorCode::kValue, "ProgressReporter: the output FILE* is null");
  os_ = nullptr;
  file_ = out;
}

ProgressReporter::~ProgressReporter() {
  try {
    if (finished_) return;
    if (std::uncaught_exceptions() > uncaught_) {
      // Training failed: "done" would be a lie, but a half-drawn line must not swallow the error.
      finished_ = true;
      if (terminal_ && line_width_ > 0) write("\n");
      return;
    }
    finish();
  } catch (...) {
    // A destructor must not throw; a lost summary line is the lesser harm.
  }
}

double ProgressReporter::now() const {
  return opt_.clock ? opt_.clock() : steady_seconds();
}

void ProgressReporter::write(const std::string& text) {
  if (file_) {
    std::fwrite(text.data(), 1, text.size(), file_);
    std::fflush(file_);
  } else {
    *os_ << text;
    os_->flush();
  }
}

std::string ProgressReporter::status_line() const {
  // Appended piece by piece: GCC 12 warns falsely (-Wrestrict) about "literal" + std::string&&.
  std::string s = opt_.label.empty() ? "" : opt_.label + "  ";
  s.append("step ").append(std::to_string(step_));
  if (total_ > 0) {
    s.append("/").append(std::to_string(total_));
    s.append(" (").append(std::to_string(step_ * 100 / total_)).append("%)");
  }
  s.append("  loss ").append(printf_string("%.4g", loss_));
  double elapsed = now() - start_;
  double rate = elapsed > 0 && step_ > 0 ? (double)step_ / elapsed : 0;
  if (rate >= 1)
    s.append("  ").append(printf_string("%.1f", rate)).append(" steps/s");
  else if (rate > 0)
    s.append("  ").append(printf_string("%.2f", 1 / rate)).append(" s/step");
  else
    s.append("  -- steps/s");
  if (total_ > 0)
    s.append("  ETA ").append(rate > 0 ? format_duration((double)(total_ - step_) / rate) : "?");
  return s;
}

void ProgressReporter::draw() {
  std::string line = status_line();
  if (terminal_) {
    std::string text = "\r" + line;
    if (line.size() < line_width_) text += std::string(line_width_ - line.size(), ' ');
    line_width_ = line.size();
    write(text);
    drawn_step_ = step_;
    last_draw_ = now();
  } else {
    write(line + "\n");
    logged_step_ = step_;
  }
}

void ProgressReporter::update(int64_t step, double loss) {
  if (finished_) throw Error(ErrorCode::kValue, "ProgressReporter::update after finish()");
  if (step < step_)
    throw Error(ErrorCode::kValue,
                "ProgressReporter::update: step " + std::to_string(step) + " comes after step " +
                    std::to_string(step_) +
                    "; steps must not go backwards (make a new reporter per run)");
  step_ = step;
  loss_ = loss;
  const bool last = total_ > 0 && step_ >= total_;
  if (terminal_) {
    if (drawn_step_ < 0 || last || now() - last_draw_ >= opt_.redraw_interval_s) draw();
  } else if (step_ != logged_step_ && (step_ % every_ == 0 || last)) {
    draw();
  }
}

void ProgressReporter::finish() {
  if (finished_) return;
  finished_ = true;
  if (terminal_) {
    if (step_ > 0 && drawn_step_ != step_) draw();
    if (line_width_ > 0) write("\n");
  } else if (step_ > 0 && logged_step_ != step_) {
    draw();
  }
  double elapsed = now() - start_;
  std::string s = opt_.label.empty() ? "" : opt_.label + "  ";
  s += "done: " + std::to_string(step_) + " steps in " + format_duration(elapsed);
  if (elapsed > 0 && step_ > 0) {
    double rate = step_ / elapsed;
    s += rate >= 1 ? " (" + printf_string("%.1f", rate) + " steps/s)"
                   : " (" + printf_string("%.2f", 1 / rate) + " s/step)";
  }
  if (step_ > 0) s += ", final loss " + printf_string("%.4g", loss_);
  write(s + "\n");
}

}  // namespace spore::train
