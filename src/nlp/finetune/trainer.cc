// The fine-tuning loop (NOTE [LoRA training]): a fixed plan of optimizer steps (each epoch's
// examples shuffled by the seed and packed into micro-batches of at most batch_tokens tokens,
// grad_accum micro-batches a step), AdamW under a linear warm-up and cosine decay, the loss as the
// mean over the step's target tokens, evaluation on a held-out split, and an atomic checkpoint
// from which a run resumes exactly where it stopped (the plan is a pure function of the data,
// options and seed, so step k of a resumed run is step k of an uninterrupted one).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <random>

#include "spore/autograd.h"
#include "spore/checkpoint.h"
#include "spore/error.h"
#include "spore/nlp/finetune.h"
#include "spore/ops.h"
#include "spore/optim.h"
#include "spore/train.h"

namespace spore::nlp {

namespace fs = std::filesystem;

namespace {

struct Step {
  int64_t epoch = 0;
  std::vector<std::vector<size_t>> micro;  // micro-batches: each one packed forward (NOTE [Packed training batches])
};

std::vector<Step> plan_steps(const std::vector<TrainExample>& train, const FinetuneOptions& o) {
  std::vector<Step> steps;
  for (int64_t e = 0; e < o.epochs; ++e) {
    std::vector<size_t> order(train.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::mt19937_64 rng(o.seed * 7919 + static_cast<uint64_t>(e) + 1);
    std::shuffle(order.begin(), order.end(), rng);
    std::vector<std::vector<size_t>> micro;
    int64_t tokens = 0;
    for (size_t i : order) {
      const int64_t n = static_cast<int64_t>(train[i].ids.size());
      if (micro.empty() || tokens + n > o.batch_tokens) {
        micro.emplace_back();
        tokens = 0;
      }
      micro.back().push_back(i);
      tokens += n;
    }
    for (size_t m = 0; m < micro.size(); m += static_cast<size_t>(o.grad_accum)) {
      Step s;
      s.epoch = e;
      for (size_t k = m; k < micro.size() && k < m + static_cast<size_t>(o.grad_accum); ++k) s.micro.push_back(micro[k]);
      steps.push_back(std::move(s));
    }
  }
  if (o.max_steps > 0 && static_cast<int64_t>(steps.size()) > o.max_steps) steps.resize(static_cast<size_t>(o.max_steps));
  return steps;
}

// What a checkpoint must agree with to be resumed: the base model's shape, the adapters, the data.
std::map<std::string, std::string> run_identity(const LoraModel& m, const std::vector<TrainExample>& all,
                                                const FinetuneOptions& o) {
  const ModelConfig& c = m.model_config();
  uint64_t h = 1469598103934665603ull;  // FNV-1a over every token and target flag
  for (const TrainExample& ex : all) {
    for (size_t i = 0; i < ex.ids.size(); ++i) {
      h = (h ^ static_cast<uint32_t>(ex.ids[i])) * 1099511628211ull;
      h = (h ^ ex.target[i]) * 1099511628211ull;
    }
    h = (h ^ 0xFFu) * 1099511628211ull;
  }
  std::string targets;
  for (const std::string& t : m.lora_config().targets) targets += (targets.empty() ? "" : ",") + t;
  char data[32];
  std::snprintf(data, sizeof data, "%016llx", static_cast<unsigned long long>(h));
  return {{"finetune.model", c.family + " hidden " + std::to_string(c.hidden_size) + " layers " +
                                 std::to_string(c.num_layers) + " heads " + std::to_string(c.num_heads) + "/" +
                                 std::to_string(c.num_kv_heads) + " vocab " + std::to_string(c.vocab_size)},
          {"finetune.base", o.base_name},
          {"finetune.lora", "rank " + std::to_string(m.lora_config().rank) + " alpha " +
                                std::to_string(m.lora_config().alpha) + " targets " + targets},
          {"finetune.data", data},
          {"finetune.plan", "epochs " + std::to_string(o.epochs) + " batch_tokens " + std::to_string(o.batch_tokens) +
                                " grad_accum " + std::to_string(o.grad_accum) + " eval_split " +
                                std::to_string(o.eval_split) + " seed " + std::to_string(o.seed) + " max_steps " +
                                std::to_string(o.max_steps)}};
}

// Packed in order into forwards of at most batch_tokens tokens, as the training micro-batches.
double eval_loss(const LoraModel& m, const std::vector<TrainExample>& eval, int64_t batch_tokens) {
  NoGradGuard no_grad;
  double nll = 0;
  int64_t n = 0, tokens = 0;
  std::vector<TrainExample> batch;
  for (size_t i = 0; i <= eval.size(); ++i) {
    const bool flush = i == eval.size() ||
                       (!batch.empty() && tokens + static_cast<int64_t>(eval[i].ids.size()) > batch_tokens);
    if (flush && !batch.empty()) {
      nll += m.batch_nll_sum(batch).item<double>();
      batch.clear();
      tokens = 0;
    }
    if (i == eval.size()) break;
    batch.push_back(eval[i]);
    tokens += static_cast<int64_t>(eval[i].ids.size());
    for (uint8_t t : eval[i].target) n += t;
  }
  return n > 0 ? nll / static_cast<double>(n) : std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

FinetuneResult finetune(LoraModel& model, std::vector<TrainExample> examples, const FinetuneOptions& o, std::FILE* log) {
  if (o.epochs < 1) throw Error(ErrorCode::kValue, "finetune: --epochs must be at least 1");
  if (o.batch_tokens < 1) throw Error(ErrorCode::kValue, "finetune: --batch-tokens must be at least 1");
  if (o.grad_accum < 1) throw Error(ErrorCode::kValue, "finetune: --grad-accum must be at least 1");
  if (!(o.eval_split >= 0 && o.eval_split < 1)) throw Error(ErrorCode::kValue, "finetune: --eval-split must be in [0, 1)");
  if (!(o.lr > 0) || !std::isfinite(o.lr)) throw Error(ErrorCode::kValue, "finetune: --lr must be positive");
  if (examples.empty()) throw Error(ErrorCode::kValue, "finetune: no training examples");
  const std::map<std::string, std::string> identity = run_identity(model, examples, o);
  // The held-out split: a seeded choice of whole examples.
  std::vector<TrainExample> train, eval;
  {
    std::vector<size_t> order(examples.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::mt19937_64 rng(o.seed * 104729 + 3);
    std::shuffle(order.begin(), order.end(), rng);
    size_t n_eval = static_cast<size_t>(std::llround(o.eval_split * static_cast<double>(examples.size())));
    if (o.eval_split > 0 && n_eval == 0) n_eval = 1;
    if (n_eval >= examples.size())
      throw Error(ErrorCode::kValue, "finetune: --eval-split " + std::to_string(o.eval_split) + " leaves no training "
                                     "example of " + std::to_string(examples.size()));
    for (size_t k = 0; k < order.size(); ++k) (k < n_eval ? eval : train).push_back(std::move(examples[order[k]]));
  }
  const std::vector<Step> plan = plan_steps(train, o);
  const int64_t total = static_cast<int64_t>(plan.size());
  const int64_t warmup = static_cast<int64_t>(std::ceil(o.warmup_ratio * static_cast<double>(total)));
  const std::vector<Parameter> params = model.parameters();
  optim::AdamW opt(params,
                   optim::linear_warmup(warmup, optim::cosine_lr(o.lr, std::max<int64_t>(1, total - warmup), o.min_lr)),
                   0.9, 0.999, 1e-8, o.weight_decay);
  std::error_code ec;
  fs::create_directories(o.out, ec);
  if (ec) throw Error(ErrorCode::kIO, "finetune: cannot create --out " + o.out.string() + ": " + ec.message());
  const fs::path ckpt_path = o.out / "checkpoint.safetensors";
  train::LossCurve curve;
  FinetuneResult result;
  result.train_examples = static_cast<int64_t>(train.size());
  result.eval_examples = static_cast<int64_t>(eval.size());
  int64_t start = 0;
  if (o.resume && fs::exists(ckpt_path, ec)) {
    const Checkpoint c = load_checkpoint(ckpt_path);
    for (const auto& [k, v] : identity) {
      const auto it = c.metadata.find(k);
      const std::string got = it == c.metadata.end() ? "(none)" : it->second;
      if (got != v && k == "finetune.base") {  // a moved or renamed copy of the same model is fine
        std::fprintf(log, "note: %s was trained from %s, this run's model is %s (same shape)\n",
                     ckpt_path.string().c_str(), got.c_str(), v.c_str());
        continue;
      }
      if (got != v)
        throw Error(ErrorCode::kValue, "finetune --resume: " + ckpt_path.string() + " was written for " + k.substr(9) +
                                           " '" + got + "', this run has '" + v + "'; resume with the same model, data "
                                           "and options, or start afresh in another --out");
    }
    std::vector<Tensor> m(params.size()), v(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      const auto w = c.tensors.find(params[i].name());
      if (w == c.tensors.end())
        throw Error(ErrorCode::kFormat, "finetune --resume: " + ckpt_path.string() + " lacks " + params[i].name());
      Parameter p = params[i];
      p.set_value(w->second.clone());
      if (auto it = c.tensors.find("adam.exp_avg." + std::to_string(i)); it != c.tensors.end()) m[i] = it->second;
      if (auto it = c.tensors.find("adam.exp_avg_sq." + std::to_string(i)); it != c.tensors.end()) v[i] = it->second;
    }
    opt.load_moments(m, v);
    const auto step = c.metadata.find("finetune.step");
    const std::string text = step == c.metadata.end() ? std::string() : step->second;
    if (text.empty() || text.size() > 12 || text.find_first_not_of("0123456789") != std::string::npos)
      throw Error(ErrorCode::kFormat, "finetune --resume: " + ckpt_path.string() +
                                          " has no step count (metadata 'finetune.step' is '" + text.substr(0, 40) + "')");
    start = std::stoll(text);
    opt.set_steps_taken(start);
    if (const auto h = c.tensors.find("history"); h != c.tensors.end()) {
      const std::vector<double> rows = h->second.to_vector<double>();
      for (size_t r = 0; r + 2 < rows.size(); r += 3) {
        std::map<std::string, double> extra;
        if (!std::isnan(rows[r + 2])) extra["eval_loss"] = rows[r + 2];
        curve.record(static_cast<int64_t>(rows[r]), rows[r + 1], extra);
      }
    }
    result.resumed_from = start;
    std::fprintf(log, "resuming %s at step %lld of %lld\n", ckpt_path.string().c_str(), (long long)start, (long long)total);
  } else if (o.resume) {
    std::fprintf(log, "no checkpoint in %s: starting afresh\n", o.out.string().c_str());
  }
  auto save = [&](int64_t step) {
    std::vector<std::pair<std::string, Tensor>> t;
    for (size_t i = 0; i < params.size(); ++i) {
      t.emplace_back(params[i].name(), params[i].value());
      if (opt.exp_avg()[i].defined()) t.emplace_back("adam.exp_avg." + std::to_string(i), opt.exp_avg()[i]);
      if (opt.exp_avg_sq()[i].defined()) t.emplace_back("adam.exp_avg_sq." + std::to_string(i), opt.exp_avg_sq()[i]);
    }
    std::vector<double> rows;
    for (const auto& p : curve.points()) {
      rows.insert(rows.end(), {static_cast<double>(p.step), p.loss,
                               p.extra.count("eval_loss") ? p.extra.at("eval_loss") : std::nan("")});
    }
    if (!rows.empty()) t.emplace_back("history", Tensor::from_vector(rows, Shape{static_cast<int64_t>(rows.size() / 3), 3}));
    std::map<std::string, std::string> meta = identity;
    meta["finetune.step"] = std::to_string(step);
    save_checkpoint(t, ckpt_path, meta);
  };
  auto write_curve = [&] {
    curve.write_csv(o.out / "loss.csv");
    train::SvgOptions svg;
    if (!curve.extra_names().empty()) svg.series = {"eval_loss"};
    curve.write_svg(o.out / "loss.svg", "LoRA fine-tuning: training loss per step, evaluation loss", svg);
  };
  const int64_t log_every = std::max<int64_t>(1, total / 20);
  const auto t0 = std::chrono::steady_clock::now();
  int64_t tokens_done = 0;
  std::vector<Tensor> grads;
  for (int64_t s = start; s < total; ++s) {
    const Step& st = plan[static_cast<size_t>(s)];
    int64_t targets = 0, tokens = 0;
    for (const std::vector<size_t>& mb : st.micro)
      for (size_t i : mb) {
        tokens += static_cast<int64_t>(train[i].ids.size());
        for (uint8_t t : train[i].target) targets += t;
      }
    const double scale = 1.0 / static_cast<double>(std::max<int64_t>(1, targets));
    grads.assign(params.size(), Tensor());
    double nll = 0;
    for (size_t k = 0; k < st.micro.size(); ++k) {
      std::vector<TrainExample> batch;
      for (size_t i : st.micro[k]) batch.push_back(train[i]);
      const uint64_t key = static_cast<uint64_t>(s) * 65537u + k + 1;
      if (o.gradient_checkpointing) {
        std::vector<Tensor> g;
        nll += model.batch_nll_sum_and_grads_checkpointed(batch, scale, key, g);
        for (size_t i = 0; i < g.size(); ++i) grads[i] = grads[i].defined() ? add(grads[i], g[i]) : g[i];
      } else {
        auto vg = value_and_grad([&](const std::vector<Tensor>&) { return mul(model.batch_nll_sum(batch, key), scale); },
                                 GradPosition::none(), params);
        const ValueAndGrad r = vg({});
        nll += r.value.item<double>() / scale;
        for (size_t i = 0; i < params.size(); ++i)
          grads[i] = grads[i].defined() ? add(grads[i], r.weight_grads[i]) : r.weight_grads[i];
      }
    }
    if (o.max_grad_norm > 0) optim::clip_grad_norm(grads, o.max_grad_norm);
    const double lr = opt.current_lr();
    opt.step(grads);
    const double loss = nll * scale;
    tokens_done += tokens;
    const int64_t step = s + 1;
    std::map<std::string, double> extra;
    const bool epoch_end = step == total || plan[static_cast<size_t>(step)].epoch != st.epoch;
    if (!eval.empty() && ((o.eval_every > 0 && step % o.eval_every == 0) || (o.eval_every == 0 && epoch_end) ||
                          step == total)) {
      extra["eval_loss"] = eval_loss(model, eval, o.batch_tokens);
      result.eval_loss = extra["eval_loss"];
    }
    curve.record(step, loss, extra);
    result.final_loss = loss;
    if (step % log_every == 0 || step == total || step == start + 1 || extra.count("eval_loss")) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const double per_step = secs / static_cast<double>(step - start);
      std::string line = "step " + std::to_string(step) + "/" + std::to_string(total) + "  epoch " +
                         std::to_string(st.epoch + 1) + "  loss ";
      char buf[160];
      // The cumulative tokens and seconds as well as their rate, so that a reader (the bench) can
      // take the rate of any span of steps.
      std::snprintf(buf, sizeof buf, "%.4f  lr %.3g  %lld tokens in %.3f s, %.0f tokens/s  ETA %s", loss, lr,
                    static_cast<long long>(tokens_done), secs, secs > 0 ? static_cast<double>(tokens_done) / secs : 0.0,
                    train::format_duration(per_step * static_cast<double>(total - step)).c_str());
      line += buf;
      if (extra.count("eval_loss")) {
        std::snprintf(buf, sizeof buf, "  eval_loss %.4f", extra["eval_loss"]);
        line += buf;
      }
      std::fprintf(log, "%s\n", line.c_str());
      std::fflush(log);
    }
    const bool stop = o.stop_after > 0 && step - start >= o.stop_after;
    if ((o.save_every > 0 && step % o.save_every == 0) || (o.save_every == 0 && epoch_end) || step == total || stop) {
      save(step);
      write_curve();
    }
    if (stop) {
      result.steps = step;
      return result;
    }
  }
  result.steps = total;
  if (!curve.empty()) {
    result.final_loss = curve.points().back().loss;
    write_curve();
  }
  write_peft_adapter(model, o.out, o.base_name);
  try {
    write_gguf_adapter(model, o.out / "adapter.gguf");
  } catch (const Error& e) {
    if (e.code() != ErrorCode::kUnsupported) throw;
    std::fprintf(log, "note: %s\n", e.what());
  }
  return result;
}

}  // namespace spore::nlp
