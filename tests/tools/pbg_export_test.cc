// ember export --format h5: PBG's checkpoint layout, read back by Debian's
// python3-h5py the way PBG's loader reads its own checkpoints
// (torchbiggraph/checkpoint_storage.py: format_version must be 1, the
// dataset "embeddings" read whole; graph_storages.py: the names json, the
// count text) and compared bit for bit with the checkpoint's rows; typed
// and untyped graphs, one type, refusals, --overwrite, nothing left on
// failure. Missing python3, numpy or h5py fails the tests.
#include "tools/export/pbg_export.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "partition/importer.h"
#include "storage/graph.h"
#include "tests/storage/test_graph.h"
#include "tests/test_process.h"
#include "tools/export/exporter.h"
#include "train/model/checkpoint.h"
#include "train/train_loop.h"

namespace ember::tools {
namespace {

using ::ember::testing::ProcessResult;
using ::ember::testing::ReadWholeFile;
using ::ember::testing::RunProcess;
using ::ember::testing::TempDir;
using ::testing::HasSubstr;

// One partition as the graph holds it.
struct Partition {
  std::string entity;
  uint32_t part = 0;
  std::vector<std::string> names;
  std::vector<float> rows;
};

// Every partition of `types` (all, or one type), read through the storage
// and checkpoint APIs.
std::vector<Partition> ReadGraph(const Graph& graph, const std::string& only_type = "") {
  auto model = LoadStoredModel(graph);
  EXPECT_TRUE(model.ok()) << model.status();
  const Manifest& m = graph.manifest();
  std::vector<Partition> out;
  for (uint32_t t = 0; t < std::max<size_t>(1, m.node_types.size()); ++t) {
    const std::string entity = m.typed() ? m.node_types[t].name : "all";
    if (!only_type.empty() && entity != only_type) continue;
    for (uint32_t j = 0; j < m.PartitionsOf(t); ++j) {
      Partition p;
      p.entity = entity;
      p.part = j;
      const uint32_t global = m.FirstPartitionOf(t) + j;
      auto rows = LoadPartitionEmbeddings(graph, *model, global);
      EXPECT_TRUE(rows.ok()) << rows.status();
      p.rows = *rows;
      EXPECT_TRUE(graph
                      .ForEachNodeName(global,
                                       [&](uint32_t, std::string_view name) {
                                         p.names.emplace_back(name);
                                         return absl::OkStatus();
                                       })
                      .ok());
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::string Python() {
  return std::filesystem::exists("/usr/bin/python3") ? "/usr/bin/python3" : "python3";
}

// Reads DIR as PBG's loader does, for each ENTITY:PARTS argument, and prints
// per partition "<entity> <part> <count>" then one line per row: its name's
// JSON, a tab, and the row's float32 bits in hex.
constexpr char kPbgReader[] = R"PY(
import json, sys
import h5py
import numpy as np
d = sys.argv[1]
with open(f"{d}/checkpoint_version.txt", "rt") as tf:
    version = int(tf.read().strip())
for arg in sys.argv[2:]:
    entity, parts = arg.rsplit(":", 1)
    for part in range(int(parts)):
        with h5py.File(f"{d}/embeddings_{entity}_{part}.v{version}.h5", "r") as hf:
            # checkpoint_storage.py, load_entity_partition and load_embeddings.
            if hf.attrs.get("format_version", None) != 1:
                raise RuntimeError("Version mismatch in embeddings file")
            dataset = hf["embeddings"]
            assert dataset.dtype == np.float32 and dataset.ndim == 2, (dataset.dtype, dataset.shape)
            out = np.empty(dataset.shape, dtype=np.float32)
            if dataset.size > 0:
                dataset.read_direct(out)
        with open(f"{d}/entity_names_{entity}_{part}.json", "rt") as tf:
            names = json.load(tf)
        with open(f"{d}/entity_count_{entity}_{part}.txt", "rt") as tf:
            count = int(tf.read().strip())
        assert len(names) == count == out.shape[0], (len(names), count, out.shape)
        print(entity, part, count, out.shape[1])
        for name, row in zip(names, out):
            print(json.dumps(name) + "\t" + " ".join("%08x" % b for b in row.view(np.uint32)))
)PY";

// What the reader printed, as partitions.
std::vector<Partition> ReadWithH5py(const std::string& dir, const std::vector<std::string>& args,
                                    const std::string& work, int* dim) {
  const std::string script = work + "/pbg_reader.py";
  std::ofstream(script) << kPbgReader;
  std::vector<std::string> argv = {Python(), script, dir};
  argv.insert(argv.end(), args.begin(), args.end());
  if (argv[0] == "python3") argv.insert(argv.begin(), "/usr/bin/env");
  ProcessResult r = RunProcess(argv, work);
  EXPECT_EQ(r.exit_code, 0) << "python3 with numpy and h5py is required (tools/install-deps.sh "
                               "installs python3-h5py); the reader said:\n"
                            << r.err;
  std::vector<Partition> out;
  const std::vector<std::string> lines = absl::StrSplit(r.out, '\n', absl::SkipEmpty());
  for (const std::string& line : lines) {
    const size_t tab = line.find('\t');
    if (tab == std::string::npos) {
      std::vector<std::string> head = absl::StrSplit(line, ' ');
      EXPECT_EQ(head.size(), 4u) << line;
      if (head.size() != 4) break;
      Partition p;
      p.entity = head[0];
      p.part = std::stoul(head[1]);
      *dim = std::stoi(head[3]);
      out.push_back(std::move(p));
      continue;
    }
    EXPECT_FALSE(out.empty()) << line;
    if (out.empty()) break;
    out.back().names.push_back(nlohmann::json::parse(line.substr(0, tab)).get<std::string>());
    const std::vector<std::string> words =
        absl::StrSplit(line.substr(tab + 1), ' ', absl::SkipEmpty());
    for (const std::string& hex : words) {
      const uint32_t bits = std::stoul(hex, nullptr, 16);
      float f;
      std::memcpy(&f, &bits, sizeof f);
      out.back().rows.push_back(f);
    }
  }
  return out;
}

void ExpectSame(const std::vector<Partition>& got, const std::vector<Partition>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(absl::StrCat(want[i].entity, " partition ", want[i].part));
    EXPECT_EQ(got[i].entity, want[i].entity);
    EXPECT_EQ(got[i].part, want[i].part);
    EXPECT_EQ(got[i].names, want[i].names);
    ASSERT_EQ(got[i].rows.size(), want[i].rows.size());
    EXPECT_EQ(
        std::memcmp(got[i].rows.data(), want[i].rows.data(), want[i].rows.size() * sizeof(float)),
        0)
        << "rows differ from the checkpoint's";
  }
}

// A typed graph (users in 2 partitions, items in 1, a tag type with a
// relation from items) and an untyped one, trained briefly. Some names need
// JSON escapes: a quote, a backslash, non-ASCII.
class PbgExportTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string likes = dir_->Sub("likes.tsv");
    {
      std::ofstream out(likes);
      for (int u = 0; u < 60; ++u) {
        for (int k = 0; k < 4; ++k) {
          const int i = (u * 7 + k * 11) % 25;
          const std::string item = i == 3 ? "ítem\"3\\" : absl::StrCat("item", i);
          out << "user" << u << "\tlikes\t" << item << "\n";
        }
      }
      for (int i = 0; i < 25; ++i) {
        out << (i == 3 ? "ítem\"3\\" : absl::StrCat("item", i)) << "\ttagged\ttag" << i % 4 << "\n";
      }
    }
    ImportOptions o;
    o.out = dir_->Sub("typed");
    o.files = {likes};
    o.schema = "likes:user:item,tagged:item:tag";
    o.type_partitions = {{"user", 2}};
    o.seed = 3;
    o.threads = 2;
    auto imported = ImportGraph(o);
    ASSERT_TRUE(imported.ok()) << imported.status();
    TrainOptions t;
    t.model.dim = 8;
    t.model.op = Operator::kTranslation;
    t.epochs = 1;
    t.devices.threads = 2;
    t.seed = 1;
    ASSERT_TRUE(TrainGraph(o.out, t).ok());

    const std::string edges = dir_->Sub("edges.tsv");
    {
      std::ofstream out(edges);
      for (int i = 0; i < 90; ++i) out << "n" << i << "\tn" << (i * 13 + 5) % 90 << "\n";
    }
    ImportOptions u;
    u.out = dir_->Sub("untyped");
    u.files = {edges};
    u.num_partitions = 3;
    u.seed = 3;
    u.threads = 2;
    auto untyped = ImportGraph(u);
    ASSERT_TRUE(untyped.ok()) << untyped.status();
    t.model.op = Operator::kNone;
    ASSERT_TRUE(TrainGraph(u.out, t).ok());

    // Untyped, two relations, ComplEx: PBG's dynamic relations, both sides.
    const std::string kg = dir_->Sub("kg.tsv");
    {
      std::ofstream out(kg);
      for (int i = 0; i < 80; ++i) {
        out << "e" << i << "\t" << (i % 2 ? "likes" : "knows") << "\te" << (i * 7 + 3) % 80 << "\n";
      }
    }
    ImportOptions k;
    k.out = dir_->Sub("kg");
    k.files = {kg};
    k.num_partitions = 2;
    k.seed = 3;
    k.threads = 2;
    auto kg_graph = ImportGraph(k);
    ASSERT_TRUE(kg_graph.ok()) << kg_graph.status();
    t.model.op = Operator::kComplexDiagonal;
    ASSERT_TRUE(TrainGraph(k.out, t).ok());
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  absl::StatusOr<ExportStats> Export(const std::string& graph_dir, const std::string& out,
                                     const std::string& type = "", bool overwrite = false,
                                     uint64_t fail_after_rows = 0) {
    auto graph = Graph::Open(graph_dir);
    if (!graph.ok()) return graph.status();
    ExportOptions o;
    o.out = out;
    o.format = ExportFormat::kH5;
    o.type = type;
    o.overwrite = overwrite;
    o.fail_after_rows = fail_after_rows;
    return ExportEmbeddings(**graph, o);
  }

  // The names in `dir`.
  static std::set<std::string> Entries(const std::string& dir) {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      out.insert(e.path().filename().string());
    }
    return out;
  }

  static TempDir* dir_;
  TempDir tmp_;
};
TempDir* PbgExportTest::dir_ = nullptr;

TEST_F(PbgExportTest, IsBuilt) {
  // This build found libhdf5-dev (tools/install-deps.sh installs it): every
  // test below needs it.
  ASSERT_TRUE(PbgExportBuilt()) << PbgExportAvailable();
}

TEST_F(PbgExportTest, PbgsLoaderReadsEveryTypeAndPartition) {
  const std::string out = tmp_.Sub("pbg");
  auto stats = Export(dir_->Sub("typed"), out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  auto graph = Graph::Open(dir_->Sub("typed"));
  ASSERT_TRUE(graph.ok());
  const Manifest& m = (*graph)->manifest();
  const std::vector<Partition> want = ReadGraph(**graph);
  ASSERT_EQ(want.size(), 4u);  // user 0, user 1, item 0, tag 0
  EXPECT_EQ(stats->rows, m.num_nodes);
  EXPECT_EQ(stats->partitions, 4u);

  // The files, named as PBG names them, and nothing else.
  const uint64_t v = stats->checkpoint_version;
  ASSERT_GE(v, 1u);
  std::set<std::string> expected = {"checkpoint_version.txt",
                                    "meta.json",
                                    "config.json",
                                    "dynamic_rel_count.txt",
                                    "dynamic_rel_names.json",
                                    absl::StrCat("model.v", v, ".h5")};
  for (const Partition& p : want) {
    expected.insert(PbgEmbeddingsFile(p.entity, p.part, v));
    expected.insert(PbgNamesFile(p.entity, p.part));
    expected.insert(PbgCountFile(p.entity, p.part));
  }
  EXPECT_EQ(Entries(out), expected);
  EXPECT_TRUE(expected.count(absl::StrCat("embeddings_user_1.v", v, ".h5")));
  EXPECT_EQ(stats->files.size(), expected.size() + 1);
  EXPECT_EQ(stats->files.front(), out);
  EXPECT_EQ(ReadWholeFile(out + "/checkpoint_version.txt"), absl::StrCat(v, "\n"));
  EXPECT_EQ(ReadWholeFile(out + "/entity_count_user_1.txt"),
            absl::StrCat(want[1].names.size(), "\n"));
  // json.dump(names, f, indent=4), ensure_ascii: the bytes PBG writes.
  const std::string item_names = ReadWholeFile(out + "/entity_names_item_0.json");
  EXPECT_THAT(item_names, HasSubstr("\"\\u00edtem\\\"3\\\\\""));
  EXPECT_EQ(item_names.substr(0, 6), "[\n    ");
  for (const std::string& entry : Entries(tmp_.path())) {
    EXPECT_FALSE(entry.starts_with("pbg.")) << entry << " left beside the export";
  }

  int dim = 0;
  const std::vector<Partition> got =
      ReadWithH5py(out, {"user:2", "item:1", "tag:1"}, tmp_.path(), &dim);
  EXPECT_EQ(dim, 8);
  ExpectSame(got, want);

  // meta.json: the model to score with, and every file.
  const nlohmann::json meta = nlohmann::json::parse(ReadWholeFile(out + "/meta.json"));
  EXPECT_EQ(meta["format"], "h5");
  EXPECT_EQ(meta["layout"], "pbg");
  EXPECT_EQ(meta["operator"], "translation");
  EXPECT_EQ(meta["checkpoint_version"], v);
  ASSERT_EQ(meta["relations"].size(), 2u);
  EXPECT_EQ(meta["relations"][0]["parameters"].size(), 8u);
  ASSERT_EQ(meta["entities"].size(), 3u);
  EXPECT_EQ(meta["entities"][0]["entity"], "user");
  EXPECT_EQ(meta["entities"][0]["partitions"].size(), 2u);
  EXPECT_EQ(meta["entities"][1]["first_global_id"], m.PartitionBase(2));
}

TEST_F(PbgExportTest, OneTypeOnly) {
  const std::string out = tmp_.Sub("items");
  auto stats = Export(dir_->Sub("typed"), out + "/", "item");  // a trailing slash is fine
  ASSERT_TRUE(stats.ok()) << stats.status();
  auto graph = Graph::Open(dir_->Sub("typed"));
  ASSERT_TRUE(graph.ok());
  const std::vector<Partition> want = ReadGraph(**graph, "item");
  ASSERT_EQ(want.size(), 1u);
  EXPECT_EQ(stats->rows, want[0].names.size());
  // 3 files of item 0, the version, meta.json, PBG's model, config and 2 relation files.
  EXPECT_EQ(Entries(out).size(), 9u);
  int dim = 0;
  ExpectSame(ReadWithH5py(out, {"item:1"}, tmp_.path(), &dim), want);
  const nlohmann::json meta = nlohmann::json::parse(ReadWholeFile(out + "/meta.json"));
  EXPECT_EQ(meta["type"], "item");
  EXPECT_EQ(meta["count"], want[0].names.size());
  EXPECT_EQ(meta["first_global_id"], (*graph)->manifest().PartitionBase(2));

  auto unknown = Export(dir_->Sub("typed"), tmp_.Sub("none"), "movie");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.status().code(), absl::StatusCode::kNotFound) << unknown.status();
  EXPECT_FALSE(std::filesystem::exists(tmp_.Sub("none")));
}

TEST_F(PbgExportTest, UntypedGraphIsTheEntityAll) {
  const std::string out = tmp_.Sub("all");
  auto stats = Export(dir_->Sub("untyped"), out);
  ASSERT_TRUE(stats.ok()) << stats.status();
  auto graph = Graph::Open(dir_->Sub("untyped"));
  ASSERT_TRUE(graph.ok());
  const std::vector<Partition> want = ReadGraph(**graph);
  ASSERT_EQ(want.size(), 3u);
  int dim = 0;
  ExpectSame(ReadWithH5py(out, {"all:3"}, tmp_.path(), &dim), want);
  const nlohmann::json meta = nlohmann::json::parse(ReadWholeFile(out + "/meta.json"));
  EXPECT_EQ(meta["entities"][0]["entity"], "all");
  EXPECT_TRUE(meta["entities"][0]["type"].is_null());
}

TEST_F(PbgExportTest, RefusesWhatItDidNotMake) {
  const std::string graph = dir_->Sub("typed");
  // A file.
  const std::string file = tmp_.Sub("file");
  std::ofstream(file) << "mine";
  auto s = Export(graph, file, "", true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_EQ(ReadWholeFile(file), "mine");

  // A folder of the user's: refused without --overwrite, and with it.
  const std::string mine = tmp_.Sub("mine");
  std::filesystem::create_directory(mine);
  std::ofstream(mine + "/notes.txt") << "keep me";
  s = Export(graph, mine);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kAlreadyExists) << s.status();
  s = Export(graph, mine, "", true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_THAT(std::string(s.status().message()), HasSubstr("notes.txt"));
  // Files named like PBG's but no meta.json of ember's: not ember's either.
  std::filesystem::remove(mine + "/notes.txt");
  std::ofstream(mine + "/embeddings_user_0.v1.h5") << "PBG's own";
  s = Export(graph, mine, "", true);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  EXPECT_EQ(ReadWholeFile(mine + "/embeddings_user_0.v1.h5"), "PBG's own");
  EXPECT_EQ(Entries(tmp_.path()), (std::set<std::string>{"file", "mine"}));

  // --relations-out is for the single-file formats.
  auto opened = Graph::Open(graph);
  ASSERT_TRUE(opened.ok());
  ExportOptions o;
  o.out = tmp_.Sub("x");
  o.format = ExportFormat::kH5;
  o.relations_out = tmp_.Sub("rels.tsv");
  auto rels = ExportEmbeddings(**opened, o);
  ASSERT_FALSE(rels.ok());
  EXPECT_THAT(std::string(rels.status().message()), HasSubstr("meta.json"));
}

TEST_F(PbgExportTest, EmptyFolderIsFilledAndOwnExportReplaced) {
  const std::string out = tmp_.Sub("pbg");
  std::filesystem::create_directory(out);
  ASSERT_TRUE(Export(dir_->Sub("typed"), out).ok());  // empty: no --overwrite needed
  EXPECT_EQ(Entries(out).size(), 18u);                // 4 partitions x 3 + 6
  // Without --overwrite an export is refused; with it, replaced whole (the
  // untyped graph's files, none of the typed one's left).
  auto again = Export(dir_->Sub("untyped"), out);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.status().code(), absl::StatusCode::kAlreadyExists) << again.status();
  ASSERT_TRUE(Export(dir_->Sub("untyped"), out, "", true).ok());
  const std::set<std::string> entries = Entries(out);
  EXPECT_EQ(entries.size(), 15u);  // 3 partitions x 3 + 6
  EXPECT_TRUE(entries.count("entity_count_all_2.txt"));
  EXPECT_FALSE(entries.count("entity_count_user_0.txt"));
  EXPECT_EQ(Entries(tmp_.path()), std::set<std::string>{"pbg"});  // no staging, no old copy
}

TEST_F(PbgExportTest, FailureLeavesNothingBehind) {
  const std::string out = tmp_.Sub("pbg");
  auto failed = Export(dir_->Sub("typed"), out, "", false, /*fail_after_rows=*/1);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kAborted) << failed.status();
  EXPECT_TRUE(Entries(tmp_.path()).empty()) << "left: " << *Entries(tmp_.path()).begin();

  // A failed --overwrite leaves the old export as it was.
  ASSERT_TRUE(Export(dir_->Sub("untyped"), out).ok());
  const std::string before = ReadWholeFile(out + "/entity_names_all_0.json");
  failed = Export(dir_->Sub("typed"), out, "", true, 1);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(ReadWholeFile(out + "/entity_names_all_0.json"), before);
  EXPECT_EQ(Entries(out).size(), 15u);
  EXPECT_EQ(Entries(tmp_.path()), std::set<std::string>{"pbg"});
}

// Checks DIR's model.v<N>.h5, config.json and dynamic_rel_*.* as PBG's
// checkpoint manager, config loader and relation-type storage read them,
// against ember's meta.json; argv: DIR, "dynamic" or "plain", and the
// expected rhs ("exact" or "omitted"). Prints "ok".
constexpr char kPbgModelCheck[] = R"PY(
import json, sys
import h5py
import numpy as np
d, mode, rhs = sys.argv[1], sys.argv[2], sys.argv[3]
meta = json.load(open(f"{d}/meta.json"))
version = int(open(f"{d}/checkpoint_version.txt").read())
config = json.load(open(f"{d}/config.json"))
# Every field of PBG's ConfigSchema, in its order, and nothing else.
fields = ["entities", "relations", "dimension", "init_scale", "max_norm", "global_emb",
          "comparator", "bias", "loss_fn", "margin", "regularization_coef", "regularizer",
          "entity_path", "edge_paths", "checkpoint_path", "init_path",
          "checkpoint_preservation_interval", "num_epochs", "num_edge_chunks",
          "max_edges_per_chunk", "bucket_order", "workers", "batch_size", "num_batch_negs",
          "num_uniform_negs", "disable_lhs_negs", "disable_rhs_negs", "lr", "relation_lr",
          "eval_fraction", "eval_num_batch_negs", "eval_num_uniform_negs", "background_io",
          "verbose", "hogwild_delay", "dynamic_relations", "num_machines",
          "num_partition_servers", "distributed_init_method", "distributed_tree_init_order",
          "num_gpus", "num_groups_for_partition_server",
          "num_groups_per_sharded_partition_server", "partition_shard_size", "half_precision"]
assert list(config) == fields, list(config)
assert config["dimension"] == meta["dimension"] and config["comparator"] == meta["comparator"]
assert config["dynamic_relations"] == (mode == "dynamic"), config["dynamic_relations"]
assert config["global_emb"] is False and config["edge_paths"] == []
for entity, schema in config["entities"].items():
    assert set(schema) == {"num_partitions", "featurized", "dimension"}, schema
names = [r["name"] for r in meta["relations"]]
assert json.load(open(f"{d}/dynamic_rel_names.json")) == names
assert int(open(f"{d}/dynamic_rel_count.txt").read()) == len(names)
rels = config["relations"]
if mode == "dynamic":
    assert [r["name"] for r in rels] == ["all_edges"], rels
else:
    assert [r["name"] for r in rels] == names, rels
for r in rels:
    assert r["operator"] == meta["operator"] and r["lhs"] in config["entities"]
    assert r["rhs"] in config["entities"]
    assert set(r) == {"name", "lhs", "rhs", "weight", "operator", "all_negs"}, r

found = {}
with h5py.File(f"{d}/model.v{version}.h5", "r") as hf:
    assert hf.attrs.get("format_version", None) == 1
    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            found[name] = (obj[...], obj.attrs["state_dict_key"])
    hf["model"].visititems(visit)
# What PBG's names and values should be, from meta.json's parameters.
params = np.array([r["parameters"] for r in meta["relations"]], dtype=np.float32)
op, dim = meta["operator"], meta["dimension"]
def parts(w, dynamic):
    if op == "complex_diagonal":
        return {"real": w[..., : dim // 2], "imag": w[..., dim // 2 :]}
    if op == "translation":
        return {"translations" if dynamic else "translation": w}
    if op == "diagonal":
        return {"diagonals" if dynamic else "diagonal": w}
    return {}
def adjoint(w):
    if op == "complex_diagonal":
        return np.concatenate([w[..., : dim // 2], -w[..., dim // 2 :]], axis=-1)
    return -w if op == "translation" else w
want = {}
if mode == "dynamic":
    sides = [("lhs", params)] + ([("rhs", adjoint(params))] if rhs == "exact" else [])
    for side, w in sides:
        for p, v in parts(w, True).items():
            want[f"relations/0/operator/{side}/{p}"] = (v, f"{side}_operators.0.{p}")
elif rhs == "exact":
    for i, w in enumerate(params):
        for p, v in parts(adjoint(w), False).items():
            want[f"relations/{i}/operator/rhs/{p}"] = (v, f"rhs_operators.{i}.{p}")
assert sorted(found) == sorted(want), (sorted(found), sorted(want))
for name, (value, key) in want.items():
    got, got_key = found[name]
    assert got.dtype == np.float32 and got.shape == value.shape, (name, got.shape, value.shape)
    assert np.array_equal(got, value), name
    assert (got_key.decode() if isinstance(got_key, bytes) else got_key) == key, (name, got_key)
assert meta["pbg_model"]["rhs_operators"] == rhs, meta["pbg_model"]
print("ok")
)PY";

// Runs `script` with `args` under /usr/bin/python3 (or python3); its output.
ProcessResult RunPython(const std::string& script, const std::vector<std::string>& args,
                        const std::string& work, const std::string& name) {
  const std::string path = work + "/" + name;
  std::ofstream(path) << script;
  std::vector<std::string> argv = {Python(), path};
  argv.insert(argv.end(), args.begin(), args.end());
  if (argv[0] == "python3") argv.insert(argv.begin(), "/usr/bin/env");
  return RunProcess(argv, work);
}

// PBG's own model file and config, for a dynamic-relations model with both
// sides exact (untyped, ComplEx with dot) and for relations of different
// types whose rhs has no exact form (translation with dot): left out.
TEST_F(PbgExportTest, WritesPbgsModelFileAndConfig) {
  const std::string kg = tmp_.Sub("kg");
  ASSERT_TRUE(Export(dir_->Sub("kg"), kg).ok());
  for (const char* file : {"config.json", "dynamic_rel_count.txt", "dynamic_rel_names.json"}) {
    EXPECT_TRUE(Entries(kg).contains(file)) << file;
  }
  ProcessResult r =
      RunPython(kPbgModelCheck, {kg, "dynamic", "exact"}, tmp_.path(), "check_model.py");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");

  const std::string typed = tmp_.Sub("typed");
  ASSERT_TRUE(Export(dir_->Sub("typed"), typed).ok());
  r = RunPython(kPbgModelCheck, {typed, "plain", "omitted"}, tmp_.path(), "check_model.py");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "ok\n");
}

// PBG's own loader and converter on ember's export: with EMBER_PBG_DIR a
// PyTorch-BigGraph checkout (and torch importable), export_to_tsv's
// make_tsv reads the export through PBG's config parser, checkpoint
// manager and model, and writes every entity and relation parameter.
TEST_F(PbgExportTest, PbgsExportToTsvReadsTheExport) {
  const char* pbg = std::getenv("EMBER_PBG_DIR");
  if (pbg == nullptr || *pbg == '\0') {
    GTEST_SKIP() << "EMBER_PBG_DIR (a PyTorch-BigGraph checkout, with torch installed) is not "
                    "set: PBG's own export_to_tsv is not run";
  }
  const std::string kg = tmp_.Sub("kg");
  ASSERT_TRUE(Export(dir_->Sub("kg"), kg).ok());
  constexpr char kRunPbg[] = R"PY(
import json, sys
sys.path.insert(0, sys.argv[1])
from torchbiggraph.config import parse_config
from torchbiggraph.converters.export_to_tsv import make_tsv
d = sys.argv[2]
config = parse_config(json.load(open(f"{d}/config.json")))
with open(f"{d}.entities.tsv", "xt") as e, open(f"{d}.relations.tsv", "xt") as r:
    make_tsv(config, e, r)
print(sum(1 for _ in open(f"{d}.entities.tsv")), sum(1 for _ in open(f"{d}.relations.tsv")))
)PY";
  const ProcessResult r = RunPython(kRunPbg, {pbg, kg}, tmp_.path(), "run_pbg.py");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 80 entities; 2 relations x (lhs, rhs) x (real, imag) lines.
  EXPECT_THAT(r.out, HasSubstr("80 8\n"));
}

TEST_F(PbgExportTest, Cli) {
  const std::string out = tmp_.Sub("pbg");
  ProcessResult r = RunProcess(
      {EMBER_BINARY, "export", dir_->Sub("typed"), "--format", "h5", "--out", out, "--quiet"},
      tmp_.path());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("wrote 18 files in " + out + " (PBG's checkpoint layout"));
  r = RunProcess({EMBER_BINARY, "export", dir_->Sub("typed"), "--format", "h5", "--out", out,
                  "--type", "item", "--json", "--quiet"},
                 tmp_.path());
  EXPECT_NE(r.exit_code, 0);
  EXPECT_THAT(r.err, HasSubstr("pass --overwrite"));
}

}  // namespace
}  // namespace ember::tools
