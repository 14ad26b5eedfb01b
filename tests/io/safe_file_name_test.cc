// safe_file_name and unique_safe_file_names (NOTE [Safe file names]): the documented mapping for
// each hostile shape, and for random bytes the property that matters: the name, created in a
// folder, is one new entry of that folder and nothing else.
#include "spore/safe_file_name.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <random>
#include <set>

#include "io_test_util.h"
#include "spore/format.h"

namespace spore::test {
namespace {

TEST(SafeFileName, OrdinaryNamesAreKept) {
  for (const char* name : {"y", "logits", "model.safetensors", "Identity_0", "layer-1.out", "名前", "a b", "x~2", "_"})
    EXPECT_EQ(safe_file_name(name), name) << name;
  EXPECT_TRUE(is_safe_file_name("y"));
  EXPECT_FALSE(is_safe_file_name(""));
}

TEST(SafeFileName, SeparatorsTraversalAndControlCharactersAreMapped) {
  EXPECT_EQ(safe_file_name("../escape"), "___escape");
  EXPECT_EQ(safe_file_name("/tmp/abs"), "_tmp_abs");
  EXPECT_EQ(safe_file_name("a/b"), "a_b");
  EXPECT_EQ(safe_file_name("a\\b"), "a_b");
  EXPECT_EQ(safe_file_name(".."), "__");
  EXPECT_EQ(safe_file_name("."), "_");
  EXPECT_EQ(safe_file_name(".hidden"), "_hidden");
  EXPECT_EQ(safe_file_name(std::string("a\0b", 3)), "a_b");
  EXPECT_EQ(safe_file_name("bell\x07\x1b[31m"), "bell__[31m");
  EXPECT_EQ(safe_file_name("del\x7f"), "del_");
  EXPECT_EQ(safe_file_name("c1\xc2\x9b"), "c1_");  // U+009B, the 8-bit CSI
  EXPECT_EQ(safe_file_name("ends."), "ends_");
  EXPECT_EQ(safe_file_name("ends "), "ends_");
  EXPECT_EQ(safe_file_name("Identity:0"), "Identity_0");
  EXPECT_EQ(safe_file_name("a<b>c\"d|e?f*g"), "a_b_c_d_e_f_g");
  EXPECT_EQ(safe_file_name(""), "_");
  EXPECT_EQ(safe_file_name("", "output3"), "output3");
  EXPECT_EQ(safe_file_name("", "../x"), "___x");
}

TEST(SafeFileName, BytesThatAreNotUtf8AreMapped) {
  EXPECT_EQ(safe_file_name("\xff\xfe"), "__");
  EXPECT_EQ(safe_file_name("\xc0\xaf"), "__");          // an overlong '/'
  EXPECT_EQ(safe_file_name("\xed\xa0\x80"), "___");     // a UTF-16 surrogate
  EXPECT_EQ(safe_file_name("\xf4\x90\x80\x80"), "____");  // past U+10FFFF
  EXPECT_EQ(safe_file_name("caf\xc3\xa9"), "caf\xc3\xa9");
  EXPECT_EQ(safe_file_name("\xf0\x9f\x99\x82"), "\xf0\x9f\x99\x82");
}

TEST(SafeFileName, WindowsDeviceNamesGetAPrefix) {
  for (const char* name : {"CON", "con", "Prn", "aux", "NUL", "com1", "COM9", "lpt0", "con.txt", "NUL.tar.gz"})
    EXPECT_EQ(safe_file_name(name), std::string("_") + name) << name;
  for (const char* name : {"console", "comx", "com10", "lpt", "xcon", "auxiliary.txt"})
    EXPECT_EQ(safe_file_name(name), name) << name;
}

TEST(SafeFileName, LongNamesAreCutWithAHashOfTheWhole) {
  const std::string a = std::string(200, 'a') + "1", b = std::string(200, 'a') + "2";
  const std::string sa = safe_file_name(a), sb = safe_file_name(b);
  EXPECT_EQ(sa.size(), kMaxSafeFileNameBytes);
  EXPECT_EQ(sa, std::string(kMaxSafeFileNameBytes - 17, 'a') + "~" + sha256_bytes(a).substr(0, 16));
  EXPECT_NE(sa, sb);
  EXPECT_EQ(safe_file_name(std::string(kMaxSafeFileNameBytes, 'k')), std::string(kMaxSafeFileNameBytes, 'k'));
  // Two-byte characters: the cut never splits one.
  std::string wide;
  for (int i = 0; i < 100; ++i) wide += "\xc3\xa9";
  const std::string sw = safe_file_name(wide);
  EXPECT_LE(sw.size(), kMaxSafeFileNameBytes);
  EXPECT_EQ(sw.substr(0, sw.find('~')).size() % 2, 0u);
  EXPECT_EQ(safe_file_name(sw), sw);
}

TEST(SafeFileName, UniqueNamesKeepSafeOnesAndNumberTheRest) {
  const std::vector<std::string> got = unique_safe_file_names({"a/b", "y", "Y", "a_b", "", "", "y", "_"});
  // Already-safe names first ("y", "a_b", "_"), then the rest in order; case does not separate
  // names ("Y~2" takes "y~2").
  EXPECT_EQ(got, (std::vector<std::string>{"a_b~2", "y", "Y~2", "a_b", "_~2", "_~3", "y~3", "_"}));
  // Unnamed entries are made-up names (prefix + index) and yield to a real name of that spelling.
  EXPECT_EQ(unique_safe_file_names({"", "output0", "", "x"}, "output"),
            (std::vector<std::string>{"output0~2", "output0", "output2", "x"}));
  // A numbered name that is itself taken moves on.
  EXPECT_EQ(unique_safe_file_names({"a/b", "a_b", "a_b~2"}), (std::vector<std::string>{"a_b~3", "a_b", "a_b~2"}));
}

// Random names: each safe name, created with O_EXCL in an empty folder, is exactly one new entry
// of that folder with that name (nothing elsewhere, no folder made), and distinct inputs stay
// distinct files.
TEST(SafeFileName, RandomNamesAlwaysNameOneFileInTheFolder) {
  TempDir dir;
  std::mt19937 gen(11);
  const std::string alphabet = std::string("./\\\0\x01\x1f\x7f:*?\"<>| aA.~", 19) + "\xc3\xa9\xff\xc2\x9b\xe2\x80\xae";
  std::vector<std::string> names;
  for (int i = 0; i < 400; ++i) {
    std::string s;
    const int len = (int)(gen() % (i % 50 == 0 ? 400 : 12));
    for (int k = 0; k < len; ++k) s += alphabet[gen() % alphabet.size()];
    names.push_back(s);
    const std::string safe = safe_file_name(s);
    ASSERT_TRUE(is_safe_file_name(safe)) << testing::PrintToString(s);
    ASSERT_LE(safe.size(), kMaxSafeFileNameBytes);
  }
  const std::vector<std::string> unique = unique_safe_file_names(names);
  std::set<std::string> lowered;
  for (const std::string& u : unique) {
    std::string l = u;
    for (char& c : l) c = (char)std::tolower((unsigned char)c);
    EXPECT_TRUE(lowered.insert(l).second) << u;
    const int fd = ::open((dir.path() / u).c_str(), O_WRONLY | O_CREAT | O_EXCL, 0644);
    ASSERT_GE(fd, 0) << testing::PrintToString(u);
    ::close(fd);
  }
  const std::vector<std::string> listed = dir.list();
  EXPECT_EQ(std::set<std::string>(listed.begin(), listed.end()), std::set<std::string>(unique.begin(), unique.end()));
  for (const auto& e : std::filesystem::directory_iterator(dir.path())) EXPECT_TRUE(e.is_regular_file()) << e.path();
}

}  // namespace
}  // namespace spore::test
