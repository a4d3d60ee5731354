#include "storage/base/json_reader.h"

#include <cstdint>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace ember {
namespace {

using Json = nlohmann::json;

const JsonReader kReader("/g/MANIFEST.json", absl::StatusCode::kDataLoss);

void ExpectError(const absl::Status& s, const std::string& field) {
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_NE(s.message().find("/g/MANIFEST.json: field '" + field + "'"), std::string::npos)
      << s;
}

TEST(JsonReaderTest, ReadsValuesOfTheRightType) {
  const Json j = Json::parse(
      R"({"u": 7, "s": "x", "b": true, "d": 1.5, "i": -3, "a": [1, 2], "o": {}})");
  uint64_t u = 0;
  uint32_t u32 = 0;
  std::string str;
  bool b = false;
  double d = 0;
  float f = 0;
  int i = 0;
  std::vector<uint64_t> a;
  EXPECT_TRUE(kReader.Required(j, "u", "u", &u).ok());
  EXPECT_TRUE(kReader.Required(j, "u", "u", &u32).ok());
  EXPECT_TRUE(kReader.Required(j, "s", "s", &str).ok());
  EXPECT_TRUE(kReader.Required(j, "b", "b", &b).ok());
  EXPECT_TRUE(kReader.Required(j, "d", "d", &d).ok());
  EXPECT_TRUE(kReader.Required(j, "d", "d", &f).ok());
  EXPECT_TRUE(kReader.Required(j, "i", "i", &i).ok());
  EXPECT_TRUE(kReader.Required(j, "a", "a", &a).ok());
  EXPECT_TRUE(kReader.Object(j["o"], "o").ok());
  EXPECT_EQ(u, 7u);
  EXPECT_EQ(u32, 7u);
  EXPECT_EQ(str, "x");
  EXPECT_TRUE(b);
  EXPECT_EQ(d, 1.5);
  EXPECT_EQ(f, 1.5f);
  EXPECT_EQ(i, -3);
  EXPECT_EQ(a, (std::vector<uint64_t>{1, 2}));
}

TEST(JsonReaderTest, WrongTypesAreErrorsNamingFileAndField) {
  const Json j = Json::parse(
      R"({"t": {"next_round": "12", "seed": -1, "big": 4294967296, "a": [1, "2"],
          "flag": 1, "name": 3, "i": 1.5, "huge": 3000000000}})");
  const Json& t = j["t"];
  uint64_t u = 99;
  ExpectError(kReader.Required(t, "next_round", "t.next_round", &u), "t.next_round");
  ExpectError(kReader.Required(t, "seed", "t.seed", &u), "t.seed");
  EXPECT_EQ(u, 99u) << "untouched on error";
  uint32_t u32 = 0;
  ExpectError(kReader.Required(t, "big", "t.big", &u32), "t.big");
  std::vector<uint64_t> a;
  ExpectError(kReader.Required(t, "a", "t.a", &a), "t.a[1]");
  bool b = false;
  ExpectError(kReader.Required(t, "flag", "t.flag", &b), "t.flag");
  std::string s;
  ExpectError(kReader.Required(t, "name", "t.name", &s), "t.name");
  int i = 0;
  ExpectError(kReader.Required(t, "i", "t.i", &i), "t.i");
  ExpectError(kReader.Required(t, "huge", "t.huge", &i), "t.huge");
  ExpectError(kReader.Object(t["name"], "t.name"), "t.name");
}

TEST(JsonReaderTest, MissingAndOptionalMembers) {
  const Json j = Json::parse(R"({"t": {"x": 1}, "n": 5})");
  uint64_t u = 42;
  ExpectError(kReader.Required(j["t"], "y", "t.y", &u), "t.y");
  EXPECT_TRUE(kReader.Optional(j["t"], "y", "t.y", &u).ok());
  EXPECT_EQ(u, 42u);
  EXPECT_TRUE(kReader.Optional(Json(), "y", "t.y", &u).ok()) << "absent parent";
  // A member of something that is not an object.
  ExpectError(kReader.Optional(j["n"], "y", "n.y", &u), "n.y");
  ExpectError(kReader.Required(j["n"], "y", "n.y", &u), "n.y");
  EXPECT_EQ(JsonReader::Find(j["n"], "y"), nullptr);
  EXPECT_EQ(JsonReader::Find(Json::parse("[1]"), "y"), nullptr);
}

}  // namespace
}  // namespace ember
