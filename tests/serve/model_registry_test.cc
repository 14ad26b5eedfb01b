// The registry's policy (src/serve/model_registry.cc, NOTE [Many models]) with a fake loader
// whose instances have chosen byte counts: first use loads, least recently used idle models are
// unloaded under max_memory, a model in use never is, a model too large alone is 507 without
// disturbing the others, a failed load is a 500 naming the file (remembered), unknown and
// path-like names are 404 without the loader seeing them, one load per model however many ask,
// and a load does not hold up requests for models already loaded.
#include <gtest/gtest.h>

#include <atomic>
#include <future>
#include <map>
#include <thread>

#include "serve/api_error.h"
#include "serve/model_registry.h"
#include "spore/error.h"

namespace spore::serve {
namespace {

using namespace std::chrono_literals;

struct FakeModels {
  std::map<std::string, uint64_t> bytes;  // by name; absent: the load fails
  std::mutex mu;
  std::map<std::string, int> loads;
  std::function<void(const std::string&)> during_load;  // runs inside the loader
  ModelRegistry::Loader loader() {
    return [this](const ModelSource& s) {
      {
        std::lock_guard<std::mutex> lock(mu);
        ++loads[s.name];
      }
      if (during_load) during_load(s.name);
      auto it = bytes.find(s.name);
      if (it == bytes.end()) throw Error(ErrorCode::kFormat, s.path.string() + ": missing tensor blk.0.attn_q.weight");
      auto inst = std::make_unique<ModelInstance>();
      inst->bytes = it->second;
      return inst;
    };
  }
  int load_count(const std::string& n) {
    std::lock_guard<std::mutex> lock(mu);
    return loads[n];
  }
};

std::vector<ModelSource> catalogue(std::initializer_list<const char*> names) {
  std::vector<ModelSource> c;
  for (const char* n : names) c.push_back({n, std::string("/models/") + n + ".gguf"});
  return c;
}

std::string state_of(const ModelRegistry& r, const std::string& name) {
  for (const auto& s : r.status())
    if (s.name == name) return s.state;
  return "?";
}

ApiError refusal(ModelRegistry& r, const std::string& name) {
  try {
    r.acquire(name);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "no refusal for " << name;
  return ApiError(0, "");
}

TEST(ModelRegistry, LoadsOnFirstUseAndUnloadsLeastRecentlyUsed) {
  FakeModels f;
  f.bytes = {{"a", 100}, {"b", 100}, {"c", 100}};
  ModelRegistry r(catalogue({"a", "b", "c"}), {.max_memory = 250}, f.loader());
  EXPECT_EQ(state_of(r, "a"), "unloaded");
  r.acquire("a");
  r.acquire("b");
  r.acquire("a");  // a is now more recent than b
  EXPECT_EQ(f.load_count("a"), 1);
  EXPECT_EQ(r.loaded_bytes(), 200u);
  r.acquire("c");  // 300 > 250: b, the least recently used, goes
  EXPECT_EQ(state_of(r, "a"), "loaded");
  EXPECT_EQ(state_of(r, "b"), "unloaded");
  EXPECT_EQ(state_of(r, "c"), "loaded");
  EXPECT_EQ(r.loaded_bytes(), 200u);
  r.acquire("b");  // loaded again (its size known: room made first); a is now the oldest
  EXPECT_EQ(f.load_count("b"), 2);
  EXPECT_EQ(state_of(r, "a"), "unloaded");
  EXPECT_LE(r.loaded_bytes(), 250u);
}

TEST(ModelRegistry, AModelInUseIsNeverUnloaded) {
  FakeModels f;
  f.bytes = {{"a", 100}, {"b", 100}};
  ModelRegistry r(catalogue({"a", "b"}), {.max_memory = 150, .wait_for_room = 200ms}, f.loader());
  auto held = r.acquire("a");
  // b does not fit beside a, which is in use: the load waits, then gives up with 503.
  const ApiError e = refusal(r, "b");
  EXPECT_EQ(e.status, 503);
  EXPECT_EQ(e.code, "model_busy");
  EXPECT_EQ(state_of(r, "a"), "loaded");
  EXPECT_EQ(state_of(r, "b"), "unloaded");  // not remembered as a failure
  // Released while b waits: b loads and a goes.
  ModelRegistry r2(catalogue({"a", "b"}), {.max_memory = 150, .wait_for_room = 30000ms}, f.loader());
  auto held2 = r2.acquire("a");
  auto got_b = std::async(std::launch::async, [&] { return r2.acquire("b"); });
  EXPECT_EQ(got_b.wait_for(300ms), std::future_status::timeout);  // still waiting for room
  EXPECT_EQ(state_of(r2, "a"), "loaded");
  held2.reset();
  ASSERT_EQ(got_b.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(got_b.get()->name(), "b");
  EXPECT_EQ(state_of(r2, "a"), "unloaded");
}

TEST(ModelRegistry, TooLargeAloneIs507AndDisturbsNoOne) {
  FakeModels f;
  f.bytes = {{"a", 100}, {"big", 1000}};
  ModelRegistry r(catalogue({"a", "big"}), {.max_memory = 500}, f.loader());
  r.acquire("a");
  const ApiError e = refusal(r, "big");
  EXPECT_EQ(e.status, 507);
  EXPECT_EQ(e.code, "model_too_large");
  EXPECT_NE(std::string(e.what()).find("/models/big.gguf"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("--max-memory"), std::string::npos) << e.what();
  EXPECT_EQ(state_of(r, "a"), "loaded");  // not unloaded to try
  EXPECT_EQ(state_of(r, "big"), "too_large");
  EXPECT_EQ(refusal(r, "big").status, 507);
  EXPECT_EQ(f.load_count("big"), 1);  // known now: not loaded again
  EXPECT_EQ(f.load_count("a"), 1);
}

TEST(ModelRegistry, AFailedLoadNamesTheFileAndTheRestServe) {
  FakeModels f;
  f.bytes = {{"a", 100}};
  ModelRegistry r(catalogue({"a", "broken"}), {}, f.loader());
  const ApiError e = refusal(r, "broken");
  EXPECT_EQ(e.status, 500);
  EXPECT_EQ(e.code, "model_load_failed");
  EXPECT_NE(std::string(e.what()).find("/models/broken.gguf"), std::string::npos) << e.what();
  EXPECT_NE(std::string(e.what()).find("missing tensor"), std::string::npos) << e.what();
  EXPECT_EQ(refusal(r, "broken").code, "model_load_failed");
  EXPECT_EQ(f.load_count("broken"), 1);
  EXPECT_EQ(r.acquire("a")->name(), "a");
  EXPECT_EQ(state_of(r, "broken"), "failed");
}

TEST(ModelRegistry, UnknownAndPathLikeNamesAre404) {
  FakeModels f;
  f.bytes = {{"a", 1}};
  ModelRegistry r(catalogue({"a"}), {}, f.loader());
  for (const char* name : {"b", "../a", "/models/a.gguf", "a.gguf", "./a", "a/", "", "A"}) {
    const ApiError e = refusal(r, name);
    EXPECT_EQ(e.status, 404) << name;
    EXPECT_EQ(e.code, "model_not_found") << name;
    EXPECT_NE(std::string(e.what()).find("'a'"), std::string::npos) << e.what();  // lists what is served
  }
  std::lock_guard<std::mutex> lock(f.mu);
  EXPECT_EQ(f.loads.size(), 0u);  // the loader never saw a request's text
}

TEST(ModelRegistry, OneLoadHoweverManyAskAndOthersKeepServing) {
  FakeModels f;
  f.bytes = {{"a", 1}, {"slow", 1}};
  std::promise<void> release_load;
  std::shared_future<void> released = release_load.get_future().share();
  std::atomic<int> in_loader{0};
  f.during_load = [&](const std::string& n) {
    if (n != "slow") return;
    ++in_loader;
    released.wait();
  };
  ModelRegistry r(catalogue({"a", "slow"}), {}, f.loader());
  r.acquire("a");
  std::vector<std::future<std::string>> waiting;
  for (int i = 0; i < 4; ++i)
    waiting.push_back(std::async(std::launch::async, [&] { return r.acquire("slow")->name(); }));
  for (int i = 0; i < 500 && in_loader == 0; ++i) std::this_thread::sleep_for(2ms);
  ASSERT_EQ(in_loader, 1);
  EXPECT_EQ(state_of(r, "slow"), "loading");
  // While "slow" loads, the loaded model is handed out at once.
  auto other = std::async(std::launch::async, [&] { return r.acquire("a")->name(); });
  ASSERT_EQ(other.wait_for(5s), std::future_status::ready);
  EXPECT_EQ(other.get(), "a");
  release_load.set_value();
  for (auto& w : waiting) EXPECT_EQ(w.get(), "slow");
  EXPECT_EQ(f.load_count("slow"), 1);
}

}  // namespace
}  // namespace spore::serve
