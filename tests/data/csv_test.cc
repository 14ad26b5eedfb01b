// CsvSource: headers, dtypes, grouped columns, quoting, and clear kFormat errors for ragged
// lines and cells that are not numbers.
#include <random>

#include "data_test_util.h"

namespace spore::data::test {
namespace {

TEST(DataCsv, HeaderNamesFloatColumns) {
  ScratchDir dir;
  std::string p = dir.write("a.csv", "a,b,c\n1,2,3\n4.5, -1e3 ,+7\n\n-0.25,nan,inf\n");
  Dataset ds = CsvSource(p);
  EXPECT_EQ(ds.column_names(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(ds.get_dataset_size(), 3);
  std::vector<Row> rows = collect(ds);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0][0].ndim(), 0);
  EXPECT_EQ(rows[0][0].dtype(), DType::kFloat32);
  EXPECT_EQ(rows[1][0].item<float>(), 4.5f);
  EXPECT_EQ(rows[1][1].item<float>(), -1000.0f);
  EXPECT_EQ(rows[1][2].item<float>(), 7.0f);
  EXPECT_EQ(rows[2][0].item<float>(), -0.25f);
  EXPECT_TRUE(std::isnan(rows[2][1].item<float>()));
  EXPECT_TRUE(std::isinf(rows[2][2].item<float>()));
}

TEST(DataCsv, GroupedColumnsDtypesQuotesAndLineEndings) {
  ScratchDir dir;
  std::string p = dir.write("g.csv",
                            "\xEF\xBB\xBF"
                            "f0,f1,f2,f3,label,flag,small,big\r\n"
                            "0.5,1.5,2.5,3.5,3,true,-128,9007199254740993\r\n"
                            "\"1\",\"2\" , 3,4,\"7\",0,127,-5\r\n");
  CsvOptions o;
  o.columns = {{"x", DType::kFloat64, 4},
               {"label", DType::kInt32, 0},
               {"flag", DType::kBool, 0},
               {"small", DType::kInt8, 0},
               {"big", DType::kInt64, 0}};
  Dataset ds = CsvSource(p, o);
  EXPECT_EQ(ds.column_names(), (std::vector<std::string>{"x", "label", "flag", "small", "big"}));
  std::vector<Row> b = collect(ds.batch(2));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0][0].shape(), (Shape{2, 4}));
  EXPECT_EQ(b[0][0].to_vector<double>(), (std::vector<double>{0.5, 1.5, 2.5, 3.5, 1, 2, 3, 4}));
  EXPECT_EQ(b[0][1].to_vector<int32_t>(), (std::vector<int32_t>{3, 7}));
  EXPECT_EQ(b[0][2].dtype(), DType::kBool);
  EXPECT_EQ(b[0][2].to_bytes(), (std::vector<uint8_t>{1, 0}));
  EXPECT_EQ(b[0][3].to_vector<int8_t>(), (std::vector<int8_t>{-128, 127}));
  EXPECT_EQ(b[0][4].to_vector<int64_t>(), (std::vector<int64_t>{9007199254740993LL, -5}));
}

TEST(DataCsv, WithoutHeaderAndOtherDelimiters) {
  ScratchDir dir;
  std::string p = dir.write("n.csv", "1;2\n3;4\n");
  CsvOptions o;
  o.header = false;
  o.delimiter = ';';
  Dataset ds = CsvSource(p, o);
  EXPECT_EQ(ds.column_names(), (std::vector<std::string>{"column_0", "column_1"}));
  std::vector<Row> rows = collect(ds);
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1][1].item<float>(), 4.0f);
  std::string t = dir.write("t.tsv", "a\tb\n 1\t2 \n");
  o.header = true;
  o.delimiter = '\t';
  EXPECT_EQ(collect(CsvSource(t, o))[0][1].item<float>(), 2.0f);
  // Half-precision columns round to nearest even.
  std::string h = dir.write("h.csv", "v\n0.1\n");
  CsvOptions ho;
  ho.columns = {{"v", DType::kFloat16, 0}};
  EXPECT_EQ(collect(CsvSource(h, ho))[0][0].to_bytes(),
            (std::vector<uint8_t>{0x66, 0x2e}));                          // 0x2e66
  EXPECT_EQ(collect(CsvSource(dir.write("e.csv", "a,b\n"))).size(), 0u);  // header only: no rows
}

TEST(DataCsv, RaggedLinesAndBadCellsNameFileLineAndField) {
  ScratchDir dir;
  std::string p = dir.write("ragged.csv", "a,b,c\n1,2,3\n4,5\n");
  expect_error([&] { CsvSource(p); }, ErrorCode::kFormat,
               {"ragged.csv", "line 3", "2 fields", "header on line 1 has 3"});
  p = dir.write("ragged2.csv", "1,2\n\n3,4,5\n");
  CsvOptions nh;
  nh.header = false;
  expect_error([&] { CsvSource(p, nh); }, ErrorCode::kFormat,
               {"ragged2.csv", "line 3", "3 fields", "first line (1) has 2"});
  p = dir.write("text.csv", "a,b\n1,2\n3,abc\n");
  expect_error([&] { CsvSource(p); }, ErrorCode::kFormat,
               {"text.csv", "line 3", "field 2", "column 'b'", "'abc'", "not a number"});
  p = dir.write("blank.csv", "a,b\n1,\n");
  expect_error([&] { CsvSource(p); }, ErrorCode::kFormat,
               {"blank.csv", "line 2", "field 2", "empty"});
  p = dir.write("partial.csv", "a\n1.5x\n");
  expect_error([&] { CsvSource(p); }, ErrorCode::kFormat, {"partial.csv", "'1.5x'"});
  p = dir.write("quote.csv", "a,b\n1,\"2\n");
  expect_error([&] { CsvSource(p); }, ErrorCode::kFormat, {"quote.csv", "line 2", "not closed"});
  p = dir.write("after.csv", "a,b\n1,\"2\"x\n");
  expect_error([&] { CsvSource(p); }, ErrorCode::kFormat,
               {"after.csv", "line 2", "after the closing quote"});
  CsvOptions ints;
  ints.columns = {{"i", DType::kInt32, 0}, {"u", DType::kUInt8, 0}};
  p = dir.write("int.csv", "i,u\n1,2\n2.5,3\n");
  expect_error([&] { CsvSource(p, ints); }, ErrorCode::kFormat,
               {"int.csv", "line 3", "column 'i'", "not an integer"});
  p = dir.write("range.csv", "i,u\n1,256\n");
  expect_error([&] { CsvSource(p, ints); }, ErrorCode::kFormat,
               {"range.csv", "line 2", "'256'", "range of uint8"});
  p = dir.write("range2.csv", "i,u\n99999999999,1\n");
  expect_error([&] { CsvSource(p, ints); }, ErrorCode::kFormat, {"range2.csv", "range of int32"});
  CsvOptions halfs;
  halfs.columns = {{"h", DType::kFloat16, 0}};
  p = dir.write("half.csv", "h\n70000\n");
  expect_error([&] { CsvSource(p, halfs); }, ErrorCode::kFormat, {"half.csv", "range of float16"});
  CsvOptions bools;
  bools.columns = {{"b", DType::kBool, 0}};
  p = dir.write("bool.csv", "b\nyes\n");
  expect_error([&] { CsvSource(p, bools); }, ErrorCode::kFormat, {"bool.csv", "not a bool"});
  p = dir.write("hdr.csv", "a,b,c\n1,2,3\n");
  expect_error([&] { CsvSource(p, ints); }, ErrorCode::kFormat,
               {"hdr.csv", "header on line 1 has 3 fields", "describe 2"});
  expect_error([&] { CsvSource(dir.write("empty.csv", "")); }, ErrorCode::kFormat,
               {"empty.csv", "empty"});
  expect_error([&] { CsvSource(dir.path("missing.csv")); }, ErrorCode::kIO, {"missing.csv"});
  expect_error([&] { CsvSource(dir.write("dup.csv", "a,a\n1,2\n")); }, ErrorCode::kValue,
               {"'a' appears twice"});
  CsvOptions badw;
  badw.columns = {{"x", DType::kFloat32, -2}};
  expect_error([&] { CsvSource(p, badw); }, ErrorCode::kValue, {"width -2"});
}

TEST(DataCsv, RandomBytesNeverCrash) {
  ScratchDir dir;
  std::mt19937 gen(7);
  const std::string alphabet = "0123456789.,-+e\"\n\r \tnaix";
  int loaded = 0;
  for (int trial = 0; trial < 300; ++trial) {
    std::string text = "a,b\n";
    size_t n = gen() % 40;
    for (size_t i = 0; i < n; ++i)
      text += trial % 3 == 0 ? (char)(gen() & 0xff) : alphabet[gen() % alphabet.size()];
    std::string p = dir.write("fuzz.csv", text);
    try {
      Dataset ds = CsvSource(p);
      for (const Row& r : collect(ds)) EXPECT_EQ(r.size(), 2u);
      ++loaded;
    } catch (const Error& e) {
      EXPECT_TRUE(e.code() == ErrorCode::kFormat || e.code() == ErrorCode::kValue) << e.what();
    }
  }
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace spore::data::test

namespace spore::data::test {
namespace {

// NOTE [Compressed inputs]: a gzip file (here two concatenated members, as `cat a.gz b.gz`
// makes) reads like its inflated text; damage to it is a kFormat error naming the file.
TEST(DataCsv, GzipCompressedFilesInflate) {
  Dataset ds = CsvSource(fixture("two_members.csv.gz"));
  EXPECT_EQ(ds.column_names(), (std::vector<std::string>{"x", "y", "label"}));
  std::vector<Row> rows = collect(ds);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[1][0].item<float>(), 3.5f);
  EXPECT_EQ(rows[1][1].item<float>(), -4.0f);
  EXPECT_EQ(rows[2][2].item<float>(), 2.0f);

  const std::string packed = read_all(fixture("two_members.csv.gz"));
  ScratchDir dir;
  // Cut inside the first member's deflate data: the stream ends early.
  std::string cut = dir.write("cut.csv.gz", packed.substr(0, 20));
  expect_error([&] { CsvSource(cut); }, ErrorCode::kFormat, {"cut.csv.gz", "truncated"});
  std::string bad = packed;
  for (size_t i = 12; i < 20; ++i) bad[i] = (char)0xff;  // garbage in place of deflate blocks
  std::string corrupt = dir.write("corrupt.csv.gz", bad);
  expect_error([&] { CsvSource(corrupt); }, ErrorCode::kFormat, {"corrupt.csv.gz", "gzip"});
}

}  // namespace
}  // namespace spore::data::test
