#include "partition/line_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <fstream>
#include <random>

namespace ember {
namespace {

std::string TempPath(const std::string& name) {
  return ::testing::TempDir() + "/line_reader_" + name;
}

void WriteFile(const std::string& path, const std::string& data) {
  std::ofstream(path, std::ios::binary) << data;
}

// Reads all chunks back and checks line numbering and content.
std::string ReadAll(const std::string& path, size_t chunk, uint64_t* lines) {
  auto reader = LineReader::Open(path, chunk);
  EXPECT_TRUE(reader.ok()) << reader.status();
  std::string all;
  LineChunk c;
  uint64_t expect_first = 1;
  *lines = 0;
  while (true) {
    auto more = (*reader)->Next(&c);
    EXPECT_TRUE(more.ok()) << more.status();
    if (!more.ok() || !*more) break;
    EXPECT_EQ(c.first_line, expect_first);
    expect_first += c.num_lines;
    *lines += c.num_lines;
    all += c.text;
  }
  return all;
}

TEST(LineReaderTest, ChunksAreWholeLinesAcrossSizes) {
  std::mt19937 rng(1);
  std::string data;
  for (int i = 0; i < 2000; ++i) {
    data += std::string(rng() % 40, 'x') + std::to_string(i) + "\n";
  }
  data += "last-line-without-newline";
  const std::string path = TempPath("plain.txt");
  WriteFile(path, data);
  for (size_t chunk : {7, 64, 1000, 1 << 20}) {
    uint64_t lines;
    EXPECT_EQ(ReadAll(path, chunk, &lines), data) << chunk;
    EXPECT_EQ(lines, 2001u);
  }
}

TEST(LineReaderTest, ReadsGzipTransparently) {
  std::string data;
  for (int i = 0; i < 10000; ++i) data += std::to_string(i) + "\t" + std::to_string(i * 7) + "\n";
  const std::string path = TempPath("data.gz");
  gzFile gz = gzopen(path.c_str(), "wb");
  gzwrite(gz, data.data(), data.size());
  gzclose(gz);
  uint64_t lines;
  EXPECT_EQ(ReadAll(path, 4096, &lines), data);
  EXPECT_EQ(lines, 10000u);
}

TEST(LineReaderTest, TruncatedGzipIsDataLoss) {
  std::string data;
  for (int i = 0; i < 50000; ++i) data += std::to_string(i * 7919) + "\t" + std::to_string(i) + "\n";
  const std::string path = TempPath("cut.gz");
  gzFile gz = gzopen(path.c_str(), "wb");
  gzwrite(gz, data.data(), data.size());
  gzclose(gz);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), {});
  WriteFile(path, bytes.substr(0, bytes.size() / 2));
  auto reader = LineReader::Open(path, 4096);
  ASSERT_TRUE(reader.ok());
  LineChunk c;
  absl::Status status;
  while (true) {
    auto more = (*reader)->Next(&c);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    if (!*more) break;
  }
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss) << status;
  EXPECT_NE(status.message().find(path + ":"), std::string::npos) << status;
}

TEST(LineReaderTest, OverlongLineIsAnError) {
  const std::string path = TempPath("long.bin");
  WriteFile(path, "ok\n" + std::string(5000, 'z'));
  auto reader = LineReader::Open(path, 256, /*max_line_bytes=*/1000);
  ASSERT_TRUE(reader.ok());
  LineChunk c;
  absl::Status status;
  while (true) {
    auto more = (*reader)->Next(&c);
    if (!more.ok()) {
      status = more.status();
      break;
    }
    if (!*more) break;
  }
  EXPECT_FALSE(status.ok());
  EXPECT_NE(status.message().find(":2: line longer"), std::string::npos) << status;
}

TEST(LineReaderTest, MissingFileNamesPath) {
  auto reader = LineReader::Open(TempPath("does-not-exist"));
  ASSERT_FALSE(reader.ok());
  EXPECT_NE(reader.status().message().find("does-not-exist"), std::string::npos);
}

}  // namespace
}  // namespace ember
