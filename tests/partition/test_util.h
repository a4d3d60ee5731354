// Helpers shared by the `ember import` integration tests: temp dirs, input
// files, a reference reader for tab-separated edge lists, reading a graph
// back as (src name, rel name, dst name) triples; child processes come from
// tests/test_process.h.
#ifndef EMBER_TESTS_PARTITION_TEST_UTIL_H_
#define EMBER_TESTS_PARTITION_TEST_UTIL_H_

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"
#include "partition/importer.h"
#include "storage/graph.h"
#include "storage/manifest.h"
#include "storage/types.h"
#include "tests/test_process.h"

namespace ember::import_test {

namespace fs = std::filesystem;

using ::ember::testing::ChildProcess;
using ::ember::testing::PollUntil;
using ::ember::testing::ProcessResult;
using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunProcess;

// A fresh directory under ::testing::TempDir(), removed (recursively) when
// the object goes out of scope.
class ScopedTempDir {
 public:
  ScopedTempDir() {
    std::string base = ::testing::TempDir();
    if (base.empty() || base.back() != '/') base += '/';
    std::string tmpl = base + "ember_import_XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    if (::mkdtemp(buf.data()) == nullptr) {
      ADD_FAILURE() << "mkdtemp(" << tmpl << "): " << std::strerror(errno);
    }
    path_ = buf.data();
  }
  ~ScopedTempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  ScopedTempDir(const ScopedTempDir&) = delete;
  ScopedTempDir& operator=(const ScopedTempDir&) = delete;

  const std::string& path() const { return path_; }
  std::string Sub(std::string_view name) const {
    return path_ + "/" + std::string(name);
  }

 private:
  std::string path_;
};

inline void WriteFile(const std::string& path, std::string_view bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  ASSERT_TRUE(f.good()) << "cannot write " << path;
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  f.close();
  ASSERT_TRUE(f.good()) << "write failed: " << path;
}

// Entries of `out`'s parent directory named `<basename(out)>.staging-*`.
inline std::vector<std::string> StagingDirs(const std::string& out) {
  std::vector<std::string> found;
  const fs::path p(out);
  const std::string prefix = p.filename().string() + ".staging-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(p.parent_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) found.push_back(entry.path().string());
  }
  return found;
}

// Asserts that a failed import left nothing behind.
inline void ExpectNothingAt(const std::string& out) {
  EXPECT_FALSE(fs::exists(out)) << out << " exists after a failed import";
  EXPECT_TRUE(StagingDirs(out).empty())
      << "staging directory left behind: " << StagingDirs(out).front();
}

// An edge by names, as in the input text.
struct NamedEdge {
  std::string src;
  std::string rel;  // "" for two-column input
  std::string dst;
  friend bool operator==(const NamedEdge&, const NamedEdge&) = default;
  friend auto operator<=>(const NamedEdge&, const NamedEdge&) = default;
};

inline std::ostream& operator<<(std::ostream& os, const NamedEdge& e) {
  return os << "(" << e.src << ", " << e.rel << ", " << e.dst << ")";
}

// An edge whose names are decimal integers (R-MAT output), for the large
// tests where strings would cost seconds.
using IntEdge = std::pair<uint64_t, uint64_t>;

// Parses a canonical decimal integer ("0", "123"; no sign, no leading
// zeros). Returns false otherwise.
inline bool ParseCanonicalU64(std::string_view s, uint64_t* v) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *v);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Reference reader for a plain tab-separated two-column file of integer ids
// (what `ember gen rmat` writes). Independent of the importer's parser.
inline std::vector<IntEdge> ReadIntEdgeFile(const std::string& path) {
  std::vector<IntEdge> edges;
  const std::string text = ReadWholeFile(path);
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) nl = text.size();
    std::string_view line(text.data() + pos, nl - pos);
    pos = nl + 1;
    if (line.empty()) continue;
    const size_t tab = line.find('\t');
    uint64_t a = 0, b = 0;
    if (tab == std::string_view::npos ||
        !ParseCanonicalU64(line.substr(0, tab), &a) ||
        !ParseCanonicalU64(line.substr(tab + 1), &b)) {
      ADD_FAILURE() << path << ": unexpected line '" << line << "'";
      return {};
    }
    edges.emplace_back(a, b);
  }
  return edges;
}

inline uint64_t DistinctNodes(const std::vector<IntEdge>& edges) {
  std::vector<uint64_t> ids;
  ids.reserve(edges.size() * 2);
  for (const auto& [a, b] : edges) {
    ids.push_back(a);
    ids.push_back(b);
  }
  std::sort(ids.begin(), ids.end());
  return std::unique(ids.begin(), ids.end()) - ids.begin();
}

inline absl::StatusOr<std::unique_ptr<Graph>> OpenGraph(const std::string& dir) {
  return Graph::Open(dir);
}

// Names of every node, (partition, offset) -> name. Loaded with
// Graph::ForEachNodeName (one scan per partition: a point lookup per node
// costs seconds on large graphs), checked against the manifest's partition
// sizes, and cross-checked with Graph::NodeName and Graph::LookupNode on a
// sample of nodes (every `sample_stride`-th offset, plus the last).
class NameCache {
 public:
  explicit NameCache(const Graph& g, uint32_t sample_stride = 97) {
    const Manifest& m = g.manifest();
    names_.resize(m.num_partitions);
    for (uint32_t p = 0; p < m.num_partitions; ++p) {
      const uint64_t size =
          p < m.partition_sizes.size() ? m.partition_sizes[p] : 0;
      names_[p].reserve(size);
      absl::Status st = g.ForEachNodeName(
          p, [&](uint32_t offset, std::string_view name) -> absl::Status {
            if (offset != names_[p].size()) {
              return absl::InternalError(
                  "ForEachNodeName: offset " + std::to_string(offset) +
                  " after " + std::to_string(names_[p].size()) + " names");
            }
            names_[p].emplace_back(name);
            return absl::OkStatus();
          });
      EXPECT_TRUE(st.ok()) << "ForEachNodeName(" << p << "): " << st;
      EXPECT_EQ(names_[p].size(), size)
          << "partition " << p << " has " << names_[p].size()
          << " names, the manifest says " << size << " nodes";
      for (uint64_t off = 0; off < names_[p].size(); ++off) {
        if (off % sample_stride != 0 && off + 1 != names_[p].size()) continue;
        const NodeRef ref{p, static_cast<uint32_t>(off)};
        auto name = g.NodeName(ref);
        if (!name.ok()) {
          ADD_FAILURE() << "NodeName(" << p << ", " << off << "): " << name.status();
          continue;
        }
        EXPECT_EQ(*name, names_[p][off])
            << "NodeName and ForEachNodeName disagree on (" << p << ", " << off << ")";
        auto back = g.LookupNode(*name);
        if (!back.ok()) {
          ADD_FAILURE() << "LookupNode(" << *name << "): " << back.status();
          continue;
        }
        EXPECT_TRUE(*back == ref) << "LookupNode(" << *name << ") = ("
                                  << back->partition << ", " << back->offset
                                  << "), expected (" << p << ", " << off << ")";
      }
    }
  }
  // Returns nullptr (after recording a failure) for a bad reference.
  const std::string* Name(uint32_t p, uint32_t offset) {
    if (p >= names_.size() || offset >= names_[p].size()) {
      ADD_FAILURE() << "edge endpoint (" << p << ", " << offset
                    << ") is not a node of the graph";
      return nullptr;
    }
    const std::string& n = names_[p][offset];
    if (n.empty()) {
      ADD_FAILURE() << "node (" << p << ", " << offset << ") has an empty name";
      return nullptr;
    }
    return &n;
  }
  const std::vector<std::vector<std::string>>& all() const { return names_; }

 private:
  std::vector<std::vector<std::string>> names_;
};

// Every edge of `split` (all P x P buckets) by names, sorted. Also checks
// that the train bucket sizes match the manifest.
// `with_relations`: fill NamedEdge::rel with the relation's name (else "").
inline std::vector<NamedEdge> ReadNamedEdges(const Graph& g, Split split,
                                             NameCache* names,
                                             bool with_relations) {
  const Manifest& m = g.manifest();
  const uint32_t P = m.num_partitions;
  std::vector<NamedEdge> out;
  std::vector<Edge> bucket;
  for (uint32_t i = 0; i < P; ++i) {
    for (uint32_t j = 0; j < P; ++j) {
      bucket.clear();
      absl::Status s = g.ReadBucket(split, i, j, &bucket);
      EXPECT_TRUE(s.ok()) << "ReadBucket(" << SplitName(split) << ", " << i
                          << ", " << j << "): " << s;
      if (split == Split::kTrain && m.train_bucket_edges.size() == P * P) {
        EXPECT_EQ(m.train_bucket_edges[i * P + j], bucket.size())
            << "manifest train_bucket_edges[" << i << "," << j << "]";
      }
      for (const Edge& e : bucket) {
        const std::string* src = names->Name(i, e.src);
        const std::string* dst = names->Name(j, e.dst);
        if (src == nullptr || dst == nullptr) return out;
        if (e.rel >= m.relations.size()) {
          ADD_FAILURE() << "edge relation " << e.rel << " >= "
                        << m.relations.size();
          return out;
        }
        out.push_back(NamedEdge{
            *src, with_relations ? m.relations[e.rel] : std::string(), *dst});
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

inline std::vector<NamedEdge> ReadNamedEdges(const Graph& g, Split split,
                                             bool with_relations = false,
                                             uint32_t sample_stride = 97) {
  NameCache names(g, sample_stride);
  return ReadNamedEdges(g, split, &names, with_relations);
}

// As ReadNamedEdges, for graphs whose names are canonical integers.
inline std::vector<IntEdge> ReadIntEdges(const Graph& g, Split split,
                                         NameCache* names) {
  const Manifest& m = g.manifest();
  const uint32_t P = m.num_partitions;
  std::vector<IntEdge> out;
  std::vector<Edge> bucket;
  // Parsed names per partition, filled lazily through `names`.
  std::vector<std::vector<uint64_t>> ids(P);
  constexpr uint64_t kUnset = ~uint64_t{0};
  for (uint32_t p = 0; p < P && p < m.partition_sizes.size(); ++p) {
    ids[p].assign(m.partition_sizes[p], kUnset);
  }
  auto id_of = [&](uint32_t p, uint32_t off, uint64_t* v) {
    if (p < ids.size() && off < ids[p].size() && ids[p][off] != kUnset) {
      *v = ids[p][off];
      return true;
    }
    const std::string* n = names->Name(p, off);
    if (n == nullptr) return false;
    if (!ParseCanonicalU64(*n, v)) {
      ADD_FAILURE() << "node (" << p << ", " << off << ") has name '" << *n
                    << "', not an integer as in the input";
      return false;
    }
    ids[p][off] = *v;
    return true;
  };
  for (uint32_t i = 0; i < P; ++i) {
    for (uint32_t j = 0; j < P; ++j) {
      bucket.clear();
      absl::Status s = g.ReadBucket(split, i, j, &bucket);
      EXPECT_TRUE(s.ok()) << "ReadBucket(" << SplitName(split) << ", " << i
                          << ", " << j << "): " << s;
      if (split == Split::kTrain && m.train_bucket_edges.size() == P * P) {
        EXPECT_EQ(m.train_bucket_edges[i * P + j], bucket.size())
            << "manifest train_bucket_edges[" << i << "," << j << "]";
      }
      for (const Edge& e : bucket) {
        uint64_t a, b;
        if (!id_of(i, e.src, &a) || !id_of(j, e.dst, &b)) return out;
        out.emplace_back(a, b);
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Everything a graph holds that the importer decides: per split and bucket
// the edge vectors, and per partition the names in offset order.
struct GraphSnapshot {
  Manifest manifest;
  std::vector<std::vector<Edge>> buckets;  // [split][i * P + j] flattened
  std::vector<std::vector<std::string>> names;  // [partition][offset]
};

inline GraphSnapshot Snapshot(const Graph& g) {
  GraphSnapshot snap;
  snap.manifest = g.manifest();
  const uint32_t P = snap.manifest.num_partitions;
  for (Split s : kAllSplits) {
    for (uint32_t i = 0; i < P; ++i) {
      for (uint32_t j = 0; j < P; ++j) {
        std::vector<Edge> b;
        absl::Status st = g.ReadBucket(s, i, j, &b);
        EXPECT_TRUE(st.ok()) << st;
        snap.buckets.push_back(std::move(b));
      }
    }
  }
  snap.names.resize(P);
  for (uint32_t p = 0; p < P; ++p) {
    absl::Status st = g.ForEachNodeName(
        p, [&](uint32_t offset, std::string_view name) -> absl::Status {
          if (offset != snap.names[p].size()) {
            return absl::InternalError("offsets out of order");
          }
          snap.names[p].emplace_back(name);
          return absl::OkStatus();
        });
    EXPECT_TRUE(st.ok()) << "ForEachNodeName(" << p << "): " << st;
  }
  return snap;
}

// Compares two snapshots field by field, reporting the first difference.
inline void ExpectSameGraph(const GraphSnapshot& a, const GraphSnapshot& b) {
  EXPECT_EQ(a.manifest.num_nodes, b.manifest.num_nodes);
  EXPECT_EQ(a.manifest.num_partitions, b.manifest.num_partitions);
  EXPECT_EQ(a.manifest.partition_sizes, b.manifest.partition_sizes);
  EXPECT_EQ(a.manifest.relations, b.manifest.relations);
  EXPECT_EQ(a.manifest.edges.train, b.manifest.edges.train);
  EXPECT_EQ(a.manifest.edges.valid, b.manifest.edges.valid);
  EXPECT_EQ(a.manifest.edges.test, b.manifest.edges.test);
  EXPECT_EQ(a.manifest.train_bucket_edges, b.manifest.train_bucket_edges);
  ASSERT_EQ(a.buckets.size(), b.buckets.size());
  for (size_t k = 0; k < a.buckets.size(); ++k) {
    EXPECT_TRUE(a.buckets[k] == b.buckets[k])
        << "bucket #" << k << " (split " << k / (a.buckets.size() / 3)
        << ") differs: " << a.buckets[k].size() << " vs " << b.buckets[k].size()
        << " edges";
  }
  ASSERT_EQ(a.names.size(), b.names.size());
  for (size_t p = 0; p < a.names.size(); ++p) {
    EXPECT_TRUE(a.names[p] == b.names[p])
        << "node names of partition " << p << " differ";
  }
}

inline ImportOptions BasicOptions(const std::string& out,
                                  std::vector<std::string> files) {
  ImportOptions o;
  o.out = out;
  o.files = std::move(files);
  o.threads = 2;
  o.seed = 42;
  return o;
}

}  // namespace ember::import_test

#endif  // EMBER_TESTS_PARTITION_TEST_UTIL_H_
