// map: a user function over some columns, run by worker threads, results kept in input order.
//
// The iterating thread pulls input rows from upstream into a window of in-flight jobs (so
// upstream stages never see another thread), workers take jobs from a queue, and the iterating
// thread hands results on strictly from the front of the window (NOTE [Pipeline determinism]).
// Checks of the results run on the iterating thread in row order, so the first bad row is the
// one reported whatever the worker count.
#include <algorithm>
#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>

#include "data/node.h"
#include "data/stages.h"

namespace spore::data::detail {
namespace {

constexpr int kMaxWorkers = 256;

struct MapPlan {
  std::vector<int> inputs;  // child column index of each input column
  std::vector<int> layout;  // per output column: child column index, or -(k+1) for fn result k
  std::vector<std::string> columns;
};

MapPlan plan_map(const NodePtr& child, const std::vector<std::string>& input_columns,
                 const std::vector<std::string>& output_columns, int workers,
                 const std::vector<ColumnSpec>& specs) {
  const std::string label = stage_label(child.get(), "map");
  if (input_columns.empty())
    throw Error(ErrorCode::kValue,
                label +
                    ": input_columns is empty; name the columns the function reads, "
                    "from " +
                    join_names(child->columns()));
  check_unique_names(input_columns, label + ", input_columns");
  check_unique_names(output_columns, label + ", output_columns");
  if (workers < 1 || workers > kMaxWorkers)
    throw Error(ErrorCode::kValue, label + ": num_parallel_workers is " + std::to_string(workers) +
                                       "; it must be in [1, " + std::to_string(kMaxWorkers) + "]");
  if (!specs.empty() && specs.size() != output_columns.size())
    throw Error(ErrorCode::kValue,
                label + ": " + std::to_string(specs.size()) + " output spec(s) for " +
                    std::to_string(output_columns.size()) + " output column(s) " +
                    join_names(output_columns) + "; give one per output column or none");
  MapPlan plan;
  int first = (int)child->columns().size();
  for (const auto& name : input_columns) {
    int i = child->column_index(name);
    if (i < 0)
      throw Error(ErrorCode::kValue,
                  label + ": input column '" + name + "' is not one of the columns " +
                      join_names(child->columns()) + " that stage " +
                      std::to_string(child->stage()) + " '" + child->kind() + "' yields");
    plan.inputs.push_back(i);
    first = std::min(first, i);
  }
  auto is_input = [&](int i) {
    return std::find(plan.inputs.begin(), plan.inputs.end(), i) != plan.inputs.end();
  };
  for (int i = 0; i < (int)child->columns().size(); ++i) {
    if (i == first)
      for (int k = 0; k < (int)output_columns.size(); ++k) {
        plan.layout.push_back(-(k + 1));
        plan.columns.push_back(output_columns[k]);
      }
    if (is_input(i)) continue;
    plan.layout.push_back(i);
    plan.columns.push_back(child->columns()[i]);
  }
  check_unique_names(plan.columns,
                     label +
                         ": the output columns clash with the columns kept from upstream;"
                         " rename an output column. Columns after the map");
  return plan;
}

class MapNode final : public Node {
 public:
  MapNode(NodePtr child, MapFn fn, std::vector<std::string> inputs,
          std::vector<std::string> outputs, int workers, std::vector<ColumnSpec> specs,
          MapPlan plan)
      : Node("map", std::move(child), plan.columns),
        fn_(std::move(fn)),
        input_names_(std::move(inputs)),
        output_names_(std::move(outputs)),
        workers_(workers),
        specs_(std::move(specs)),
        plan_(std::move(plan)) {}

  int64_t size() const override { return child()->size(); }
  std::unique_ptr<RowStream> open(uint64_t epoch_key) const override;

  MapFn fn_;
  std::vector<std::string> input_names_, output_names_;
  int workers_;
  std::vector<ColumnSpec> specs_;
  MapPlan plan_;
};

class MapStream final : public RowStream {
 public:
  MapStream(const MapNode& n, std::unique_ptr<RowStream> child)
      : n_(n),
        child_(std::move(child)),
        checker_(n, n.output_names_, n.specs_, "the map function"),
        capacity_(std::max<size_t>(4, 2 * (size_t)n.workers_)) {
    try {
      for (int i = 0; i < n.workers_; ++i) threads_.emplace_back([this] { work(); });
    } catch (...) {
      stop();
      throw;
    }
  }
  ~MapStream() override { stop(); }

  std::optional<Row> next() override {
    fill();
    if (window_.empty()) {
      if (upstream_error_) std::rethrow_exception(std::exchange(upstream_error_, nullptr));
      return std::nullopt;
    }
    std::shared_ptr<Job> job = window_.front();
    {
      std::unique_lock<std::mutex> lock(mu_);
      done_cv_.wait(lock, [&] { return job->done; });
    }
    window_.pop_front();
    const std::string where = n_.label() + ", row " + std::to_string(job->index) +
                              ", input columns " + join_names(n_.input_names_);
    if (job->error) rethrow_with_context(job->error, where + ": the map function threw");
    checker_.check(job->outputs, job->index);
    Row out;
    out.reserve(n_.plan_.layout.size());
    for (int src : n_.plan_.layout)
      out.push_back(src >= 0 ? std::move(job->row[src]) : std::move(job->outputs[-src - 1]));
    return out;
  }

 private:
  struct Job {
    int64_t index = 0;
    Row row;     // the whole upstream row (columns the map keeps come from here)
    Row inputs;  // the values of the input columns
    Row outputs;
    std::exception_ptr error;
    bool done = false;  // guarded by mu_
  };

  void fill() {
    while (!upstream_done_ && window_.size() < capacity_) {
      std::optional<Row> row;
      try {
        row = child_->next();
      } catch (...) {
        // Reported after the rows already in flight, in order (NOTE [Pipeline determinism]).
        upstream_error_ = std::current_exception();
        upstream_done_ = true;
        break;
      }
      if (!row) {
        upstream_done_ = true;
        break;
      }
      auto job = std::make_shared<Job>();
      job->index = pulled_++;
      for (int i : n_.plan_.inputs) job->inputs.push_back((*row)[i]);
      job->row = std::move(*row);
      window_.push_back(job);
      {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(std::move(job));
      }
      work_cv_.notify_one();
    }
  }

  void work() {
    for (;;) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        work_cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (stop_) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        job->outputs = n_.fn_(job->inputs);
      } catch (...) {
        job->error = std::current_exception();
      }
      {
        std::lock_guard<std::mutex> lock(mu_);
        job->done = true;
      }
      done_cv_.notify_all();
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
      queue_.clear();
    }
    work_cv_.notify_all();
    for (auto& t : threads_) t.join();
    threads_.clear();
  }

  const MapNode& n_;
  std::unique_ptr<RowStream> child_;
  ColumnChecker checker_;
  const size_t capacity_;
  std::deque<std::shared_ptr<Job>> window_;  // iterating thread only
  bool upstream_done_ = false;
  std::exception_ptr upstream_error_;
  int64_t pulled_ = 0;

  std::mutex mu_;
  std::condition_variable work_cv_, done_cv_;
  std::deque<std::shared_ptr<Job>> queue_;  // guarded by mu_
  bool stop_ = false;                       // guarded by mu_
  std::vector<std::thread> threads_;
};

std::unique_ptr<RowStream> MapNode::open(uint64_t epoch_key) const {
  return std::make_unique<MapStream>(*this, child()->open(epoch_key));
}

}  // namespace

NodePtr make_map_node(NodePtr child, MapFn fn, std::vector<std::string> input_columns,
                      std::vector<std::string> output_columns, int num_parallel_workers,
                      std::vector<ColumnSpec> output_specs) {
  if (!fn)
    throw Error(ErrorCode::kValue, stage_label(child.get(), "map") + ": the map function is empty");
  if (output_columns.empty()) output_columns = input_columns;
  MapPlan plan = plan_map(child, input_columns, output_columns, num_parallel_workers, output_specs);
  return std::make_shared<MapNode>(std::move(child), std::move(fn), std::move(input_columns),
                                   std::move(output_columns), num_parallel_workers,
                                   std::move(output_specs), std::move(plan));
}

}  // namespace spore::data::detail
