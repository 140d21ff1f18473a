#include "corpora/input_file.h"

#include <string>
#include <vector>

#include "base/random.h"
#include "gtest/gtest.h"
#include "tests/corpora/compress_util.h"
#include "tests/corpora/test_util.h"

namespace latentd {
namespace {

absl::StatusOr<std::vector<std::string>> ReadLines(const std::string& path) {
  auto file = InputFile::Open(path);
  if (!file.ok()) return file.status();
  std::vector<std::string> lines;
  std::string line;
  while (true) {
    absl::StatusOr<bool> more = (*file)->ReadLine(&line);
    if (!more.ok()) return more.status();
    if (!*more) return lines;
    lines.push_back(line);
  }
}

// Text big enough to cross the 1 MiB read buffer and many zstd blocks.
std::string BigText() {
  Rng rng(5);
  std::string text;
  for (int line = 0; line < 60000; ++line) {
    int n = static_cast<int>(rng.UniformInt(40));
    for (int i = 0; i < n; ++i) text.push_back('a' + rng.UniformInt(26));
    text += "\n";
  }
  return text;
}

class InputFileTest : public ::testing::Test {
 protected:
  testing::TempDir dir_;
};

TEST_F(InputFileTest, PlainLinesCrLfAndLastLineWithoutNewline) {
  testing::WriteFile(dir_.File("a.txt"), "one\r\n\ntwo  \nthree   ");
  auto lines = ReadLines(dir_.File("a.txt"));
  ASSERT_TRUE(lines.ok()) << lines.status();
  EXPECT_EQ(*lines, (std::vector<std::string>{"one", "", "two  ", "three   "}));
  testing::WriteFile(dir_.File("empty.txt"), "");
  EXPECT_TRUE(ReadLines(dir_.File("empty.txt"))->empty());
}

TEST_F(InputFileTest, LineNumbersCountFromOne) {
  testing::WriteFile(dir_.File("a.txt"), "x\ny\n");
  auto file = InputFile::Open(dir_.File("a.txt"));
  ASSERT_TRUE(file.ok());
  std::string line;
  EXPECT_EQ((*file)->line_number(), 0u);
  ASSERT_TRUE(*(*file)->ReadLine(&line));
  ASSERT_TRUE(*(*file)->ReadLine(&line));
  EXPECT_EQ((*file)->line_number(), 2u);
  EXPECT_FALSE(*(*file)->ReadLine(&line));
}

TEST_F(InputFileTest, ZstdAndGzipRoundTrip) {
  const std::string text = BigText();
  testing::WriteFile(dir_.File("t.txt"), text);
  testing::WriteFile(dir_.File("t.txt.zst"), testing::ZstdCompress(text));
  testing::WriteFile(dir_.File("t.txt.gz"), testing::GzipCompress(text));
  auto plain = ReadLines(dir_.File("t.txt"));
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->size(), 60000u);
  for (const char* name : {"t.txt.zst", "t.txt.gz"}) {
    auto lines = ReadLines(dir_.File(name));
    ASSERT_TRUE(lines.ok()) << lines.status();
    EXPECT_EQ(*lines, *plain) << name;
    auto whole = ReadWholeFile(dir_.File(name));
    ASSERT_TRUE(whole.ok()) << whole.status();
    EXPECT_EQ(*whole, text) << name;
  }
  EXPECT_TRUE(IsCompressedPath("a.zst"));
  EXPECT_FALSE(IsCompressedPath("a.txt"));
}

TEST_F(InputFileTest, ConcatenatedFramesAndMembersAreRead) {
  testing::WriteFile(dir_.File("c.zst"), testing::ZstdCompress("ab\n") +
                                             testing::ZstdCompress("cd\n"));
  testing::WriteFile(dir_.File("c.gz"), testing::GzipCompress("ab\n") +
                                            testing::GzipCompress("cd\n"));
  for (const char* name : {"c.zst", "c.gz"}) {
    auto whole = ReadWholeFile(dir_.File(name));
    ASSERT_TRUE(whole.ok()) << name << whole.status();
    EXPECT_EQ(*whole, "ab\ncd\n") << name;
  }
}

TEST_F(InputFileTest, TruncatedCompressedFileIsDataLossNamingTheFile) {
  const std::string text = BigText();
  std::string zst = testing::ZstdCompress(text);
  std::string gz = testing::GzipCompress(text);
  testing::WriteFile(dir_.File("cut.zst"), zst.substr(0, zst.size() * 2 / 3));
  testing::WriteFile(dir_.File("cut.gz"), gz.substr(0, gz.size() * 2 / 3));
  testing::WriteFile(dir_.File("tail.zst"), zst.substr(0, zst.size() - 1));
  testing::WriteFile(dir_.File("tail.gz"), gz.substr(0, gz.size() - 4));
  for (const char* name : {"cut.zst", "cut.gz", "tail.zst", "tail.gz"}) {
    auto lines = ReadLines(dir_.File(name));
    ASSERT_FALSE(lines.ok()) << name;
    EXPECT_EQ(lines.status().code(), absl::StatusCode::kDataLoss) << name;
    EXPECT_NE(lines.status().message().find(name), std::string::npos)
        << lines.status();
  }
}

TEST_F(InputFileTest, CorruptCompressedFileIsDataLoss) {
  std::string zst = testing::ZstdCompress(BigText());
  zst[zst.size() / 2] ^= 0x55;
  zst[zst.size() / 2 + 1] ^= 0x55;
  testing::WriteFile(dir_.File("bad.zst"), zst);
  EXPECT_EQ(ReadWholeFile(dir_.File("bad.zst")).status().code(),
            absl::StatusCode::kDataLoss);
  testing::WriteFile(dir_.File("plain.gz"), "this is not gzip at all\n");
  EXPECT_EQ(ReadWholeFile(dir_.File("plain.gz")).status().code(),
            absl::StatusCode::kDataLoss);
  testing::WriteFile(dir_.File("plain.zst"), "this is not zstd at all\n");
  EXPECT_EQ(ReadWholeFile(dir_.File("plain.zst")).status().code(),
            absl::StatusCode::kDataLoss);
}

TEST_F(InputFileTest, MissingFileAndDirectoryAreErrors) {
  EXPECT_EQ(InputFile::Open(dir_.File("nope")).status().code(),
            absl::StatusCode::kNotFound);
  EXPECT_FALSE(InputFile::Open(dir_.path()).ok());
}

}  // namespace
}  // namespace latentd
