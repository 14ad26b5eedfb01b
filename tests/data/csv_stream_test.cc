// NOTE [Streaming CSV]: the CSV reader splits its text as it arrives, so lines that straddle the
// reader's chunks read correctly and a gzip file holding gigabytes of text costs fixed memory.
#include <zlib.h>

#include <cstdlib>
#include <fstream>

#include "data_test_util.h"

namespace spore::data::test {
namespace {

// Writes `text` gzip-compressed, `repeat` times over, with zlib's streaming writer.
void write_gzip(const std::string& path, const std::string& text, int64_t repeat = 1) {
  gzFile f = gzopen(path.c_str(), "wb1");
  ASSERT_NE(f, nullptr) << path;
  for (int64_t i = 0; i < repeat; ++i)
    ASSERT_EQ(gzwrite(f, text.data(), (unsigned)text.size()), (int)text.size());
  ASSERT_EQ(gzclose(f), Z_OK);
}

// A field of /proc/self/status in KiB (VmRSS, VmHWM), or -1.
int64_t status_kib(const std::string& key) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(key + ":", 0) == 0) return std::atoll(line.c_str() + key.size() + 1);
  return -1;
}

// Resets the peak resident set size (VmHWM) to the current one; false where Linux refuses.
bool reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  f << "5";
  f.flush();
  return f.good();
}

TEST(DataCsvStream, LinesAcrossChunkBoundariesPlainAndGzip) {
  // ~3 MiB of text: lines straddle the reader's 1 MiB chunks at varying offsets.
  std::string text = "\xEF\xBB\xBFid,value\r\n";
  const int64_t n = 150000;
  for (int64_t i = 0; i < n; ++i) {
    text += std::to_string(i) + "," + std::to_string(i % 97) + ".25";
    text += i % 3 == 0 ? "\r\n" : "\n";
    if (i % 1000 == 0) text += "\n  \n";  // blank lines are skipped but counted
  }
  ScratchDir dir;
  const std::string plain = dir.write("rows.csv", text);
  write_gzip(dir.path("rows.csv.gz"), text);
  for (const std::string& path : {plain, dir.path("rows.csv.gz")}) {
    CsvOptions opt;
    opt.columns = {{"id", DType::kInt64, 0}, {"value", DType::kFloat64, 0}};
    Dataset ds = CsvSource(path, opt);
    ASSERT_EQ(ds.get_dataset_size(), n) << path;
    std::vector<Row> rows = collect(ds.batch(n));
    ASSERT_EQ(rows.size(), 1u);
    std::vector<int64_t> ids = rows[0][0].to_vector<int64_t>();
    std::vector<double> values = rows[0][1].to_vector<double>();
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(ids[i], i) << path;
      ASSERT_EQ(values[i], (double)(i % 97) + 0.25) << path;
    }
  }
  // Line numbers count the blank lines: a bad cell near the end names its physical line.
  text += "oops,1\n";
  const std::string bad = dir.write("bad.csv", text);
  const int64_t lines = 1 + n + 2 * ((n + 999) / 1000) + 1;
  expect_error([&] { CsvSource(bad); }, ErrorCode::kFormat,
               {"bad.csv", "line " + std::to_string(lines) + ", field 1"});
}

TEST(DataCsvStream, AnOverlongLineIsRefused) {
  ScratchDir dir;
  const std::string path = dir.path("long.csv.gz");
  write_gzip(path, std::string(size_t{1} << 20, '7'), 65);  // one 65 MiB line
  expect_error([&] { CsvSource(path); }, ErrorCode::kFormat, {"long.csv.gz", "line 1", "MiB"});
}

// Issue 15, finding 3: gzip holding gigabytes of blank lines was inflated whole. Now the peak
// memory of reading it must not grow with the file. SPORE_CSV_STREAM_MIB sets the inflated size
// (the suite uses 256 MiB; docs/fuzzing.md records a 3 GiB run).
TEST(DataCsvStream, GzipOfManyNewlinesReadsInFixedMemory) {
  const char* env = std::getenv("SPORE_CSV_STREAM_MIB");
  const int64_t mib = env ? std::atoll(env) : 256;
  ScratchDir dir;
  const std::string path = dir.path("newlines.csv.gz");
  write_gzip(path, "x,y\n", 1);
  {
    gzFile f = gzopen(path.c_str(), "ab1");  // a second member: mib MiB of newlines, then a row
    ASSERT_NE(f, nullptr);
    const std::string newlines(size_t{1} << 20, '\n');
    for (int64_t i = 0; i < mib; ++i) ASSERT_EQ(gzwrite(f, newlines.data(), (unsigned)newlines.size()), 1 << 20);
    ASSERT_EQ(gzwrite(f, "1.5,2\n", 6), 6);
    ASSERT_EQ(gzclose(f), Z_OK);
  }
  if (!reset_peak_rss()) GTEST_SKIP() << "this kernel does not let a process reset its peak RSS";
  const int64_t before = status_kib("VmRSS");
  Dataset ds = CsvSource(path);
  const int64_t peak = status_kib("VmHWM");
  ASSERT_GT(before, 0);
  std::vector<Row> rows = collect(ds);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0][0].item<float>(), 1.5f);
  const int64_t grew_kib = peak - before, grew_mib = grew_kib / 1024;
  std::printf("[ csv stream ] %lld MiB of inflated newlines: peak RSS grew by %lld KiB\n", (long long)mib,
              (long long)grew_kib);
  // The chunk buffer is 1 MiB and zlib's window 32 KiB; the old reader needed the whole text.
  EXPECT_LT(grew_mib, 32) << "reading grew the peak RSS by " << grew_mib << " MiB";
}

}  // namespace
}  // namespace spore::data::test
