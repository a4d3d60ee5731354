#include "storage/graph_builder.h"

#include "storage/graph.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <stdio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "rocksdb/db.h"
#include "rocksdb/sst_file_writer.h"
#include "storage/base/file_system.h"
#include "storage/base/file_util.h"
#include "storage/base/mutex.h"
#include "storage/base/status_macros.h"
#include "storage/internal/keys.h"
#include "storage/internal/rocks_fs.h"
#include "storage/internal/rocks_util.h"
#include "storage/internal/writer_lock.h"

namespace ember {
namespace {

namespace fs = std::filesystem;

// State of one run, shared by its writer and the builder so that a writer may
// outlive the builder without dangling.
struct RunState {
  RunTarget target;
  uint32_t partition;
  std::string path;
  // Set once by the writer; read by Commit.
  std::atomic<bool> open{true};       // neither finished nor abandoned
  std::atomic<bool> has_file{false};  // finished with at least one key
};

const char* TargetName(RunTarget t) {
  switch (t) {
    case RunTarget::kShardNodes:
      return "nodes";
    case RunTarget::kShardEdges:
      return "edges";
    case RunTarget::kShardFeatures:
      return "features";
    case RunTarget::kDictByName:
      return "by_name";
    case RunTarget::kDictById:
      return "by_id";
  }
  return "unknown";
}

bool IsDictTarget(RunTarget t) {
  return t == RunTarget::kDictByName || t == RunTarget::kDictById;
}

// A key for error messages: hex-escaped, at most 64 bytes of it.
std::string PrintableKey(std::string_view key) {
  std::string s = absl::CHexEscape(internal::Sv(key.substr(0, 64)));
  if (key.size() > 64) s += "...";
  return s;
}

class SstRunWriter : public SortedRunWriter {
 public:
  explicit SstRunWriter(std::shared_ptr<RunState> state)
      : state_(std::move(state)), env_(internal::RocksEnvForCurrentFileSystem()) {
    rocksdb::Options options(
        rocksdb::DBOptions(),
        internal::ColumnFamilyOptionsFor(TargetName(state_->target), nullptr));
    options.env = env_.get();
    writer_ = std::make_unique<rocksdb::SstFileWriter>(rocksdb::EnvOptions(),
                                                       options);
  }

  ~SstRunWriter() override {
    // An unfinished run is dropped; its partial file goes with the staging
    // directory.
    state_->open.store(false);
  }

  absl::Status Add(std::string_view key, std::string_view value) override {
    RETURN_IF_ERROR(status_);
    if (finished_) {
      return status_ = absl::FailedPreconditionError(
                 absl::StrCat("Add after Finish on run ", state_->path));
    }
    if (!opened_) {
      status_ = internal::FromRocks(writer_->Open(state_->path),
                                    absl::StrCat("cannot create run file ",
                                                 state_->path));
      RETURN_IF_ERROR(status_);
      opened_ = true;
    }
    rocksdb::Status s = writer_->Put(rocksdb::Slice(key.data(), key.size()),
                                     rocksdb::Slice(value.data(), value.size()));
    if (!s.ok()) {
      status_ = internal::FromRocks(
          s, absl::StrCat("run ", state_->path, ": cannot add key '",
                          PrintableKey(key),
                          "' (keys must be strictly ascending)"));
    }
    ++count_;
    return status_;
  }

  absl::Status Finish() override {
    RETURN_IF_ERROR(status_);
    if (finished_) {
      return status_ = absl::FailedPreconditionError(
                 absl::StrCat("Finish called twice on run ", state_->path));
    }
    finished_ = true;
    if (opened_) {
      status_ = internal::FromRocks(
          writer_->Finish(),
          absl::StrCat("cannot finish run file ", state_->path));
      RETURN_IF_ERROR(status_);
      state_->has_file.store(true);
    }
    state_->open.store(false);
    return absl::OkStatus();
  }

 private:
  std::shared_ptr<RunState> state_;
  std::shared_ptr<rocksdb::Env> env_;  // outlives writer_
  std::unique_ptr<rocksdb::SstFileWriter> writer_;
  absl::Status status_;
  bool opened_ = false;
  bool finished_ = false;
  uint64_t count_ = 0;
};

bool ProcessAlive(pid_t pid) {
  if (pid <= 0) return false;
  return ::kill(pid, 0) == 0 || errno == EPERM;
}

// Removes `<base>.<kind>-<pid>` entries of `parent` whose pid is dead.
// Best effort.
void RemoveStale(const std::string& parent, const std::string& base,
                 std::string_view kind) {
  FileSystem* file_system = CurrentFileSystem();
  absl::StatusOr<std::vector<std::string>> names = file_system->ListDir(parent);
  if (!names.ok()) return;
  const std::string prefix = absl::StrCat(base, ".", internal::Sv(kind), "-");
  for (const std::string& name : *names) {
    absl::string_view rest = name;
    if (!absl::ConsumePrefix(&rest, prefix)) continue;
    int pid = 0;
    if (!absl::SimpleAtoi(rest, &pid) || ProcessAlive(pid)) continue;
    file_system->RemoveAll(absl::StrCat(parent, "/", name)).IgnoreError();
  }
}

// With --overwrite, what may stand at `out` to be replaced: nothing, an
// empty directory, or an ember graph (a directory whose MANIFEST.json reads
// as ember's) that no live process is writing. Anything else is a user's
// and is refused, naming what is there. The old graph is moved aside and
// removed without following links (std::filesystem::remove_all), so
// nothing outside `out` is touched.
absl::Status CheckReplaceable(const std::string& out) {
  FileSystem* file_system = CurrentFileSystem();
  ASSIGN_OR_RETURN(const PathKind kind, file_system->Stat(out));
  const std::string refusal =
      "; --overwrite replaces only an ember graph (a directory with ember's MANIFEST.json) or an "
      "empty directory: remove it yourself or choose another path";
  switch (kind) {
    case PathKind::kMissing:
      return absl::OkStatus();
    case PathKind::kFile:
    case PathKind::kOther:
      return absl::FailedPreconditionError(
          absl::StrCat(out, " is a file, not a graph directory", refusal));
    case PathKind::kDirectory:
      break;
  }
  ASSIGN_OR_RETURN(std::vector<std::string> names, file_system->ListDir(out));
  if (names.empty()) return absl::OkStatus();
  const std::string manifest_path = absl::StrCat(out, "/MANIFEST.json");
  if (std::find(names.begin(), names.end(), "MANIFEST.json") == names.end()) {
    std::sort(names.begin(), names.end());
    const size_t shown = std::min<size_t>(names.size(), 3);
    std::string listed;
    for (size_t i = 0; i < shown; ++i) absl::StrAppend(&listed, i ? ", " : "", names[i]);
    if (names.size() > shown) absl::StrAppend(&listed, " and ", names.size() - shown, " more");
    return absl::FailedPreconditionError(absl::StrCat(
        out, " is not an ember graph (no MANIFEST.json; it holds ", listed, ")", refusal));
  }
  const absl::StatusOr<Manifest> manifest = ReadManifest(manifest_path);
  if (!manifest.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat(out, " is not an ember graph (", manifest.status().message(), ")", refusal));
  }
  if (std::optional<std::string> writer = internal::LiveWriter(out); writer.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat(
        out, " is being written by ", *writer, "; --overwrite waits for no one: stop it first"));
  }
  return absl::OkStatus();
}

// Fsyncs every file and directory under `root`, then `root` itself (files
// before the directory holding them).
absl::Status FsyncTree(const std::string& root) {
  FileSystem* file_system = CurrentFileSystem();
  ASSIGN_OR_RETURN(std::vector<std::string> names, file_system->ListDir(root));
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    const std::string path = absl::StrCat(root, "/", name);
    ASSIGN_OR_RETURN(const PathKind kind, file_system->Stat(path));
    if (kind == PathKind::kDirectory) {
      RETURN_IF_ERROR(FsyncTree(path));
    } else if (kind == PathKind::kFile) {
      RETURN_IF_ERROR(file_system->SyncPath(path));
    }
  }
  return file_system->SyncPath(root);
}

}  // namespace

struct GraphBuilder::Rep {
  std::string out;
  std::string staging;
  std::string runs_dir;
  std::string scratch;
  GraphBuilderOptions options;
  bool committed = false;
  Graph* append = nullptr;  // set for CreateAppend builders
  uint32_t edge_generation = 0;

  // Next edge chunk number of each partition (grown on demand).
  std::vector<uint64_t> next_edge_chunk ABSL_GUARDED_BY(mu);

  Mutex mu;
  uint64_t next_run ABSL_GUARDED_BY(mu) = 0;
  std::vector<std::shared_ptr<RunState>> runs ABSL_GUARDED_BY(mu);

  // Creates DB `name` under staging with `cfs` and ingests the finished runs
  // whose target is in `targets` (index i of targets -> column family i).
  absl::Status BuildDb(const std::string& name,
                       const std::vector<std::string>& cfs,
                       const std::vector<std::vector<std::string>>& files);
};

absl::Status GraphBuilder::Rep::BuildDb(
    const std::string& name, const std::vector<std::string>& cfs,
    const std::vector<std::vector<std::string>>& files) {
  const std::string path = absl::StrCat(staging, "/", name);
  const std::shared_ptr<rocksdb::Env> env = internal::RocksEnvForCurrentFileSystem();
  rocksdb::DBOptions db_options;
  db_options.env = env.get();
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.max_open_files = 64;
  db_options.keep_log_file_num = 2;
  std::vector<rocksdb::ColumnFamilyDescriptor> descriptors;
  descriptors.emplace_back(rocksdb::kDefaultColumnFamilyName,
                           rocksdb::ColumnFamilyOptions());
  for (const std::string& cf : cfs) {
    rocksdb::ColumnFamilyOptions o =
        internal::ColumnFamilyOptionsFor(cf, nullptr);
    o.disable_auto_compactions = true;  // Commit compacts nothing.
    descriptors.emplace_back(cf, o);
  }
  rocksdb::DB* db = nullptr;
  std::vector<rocksdb::ColumnFamilyHandle*> handles;
  RETURN_IF_ERROR(internal::FromRocks(
      rocksdb::DB::Open(db_options, path, descriptors, &handles, &db),
      absl::StrCat("cannot create ", path)));
  absl::Status status;
  for (size_t i = 0; i < cfs.size() && status.ok(); ++i) {
    if (files[i].empty()) continue;
    rocksdb::IngestExternalFileOptions ingest;
    ingest.move_files = true;
    ingest.allow_global_seqno = true;
    ingest.write_global_seqno = false;
    // Runs may overlap in key range (never in keys); RocksDB then places the
    // overlapping files in level 0, each with its own sequence number.
    status = internal::FromRocks(
        db->IngestExternalFile(handles[i + 1], files[i], ingest),
        absl::StrCat("cannot ingest ", files[i].size(), " run(s) into ", path,
                     " column family ", cfs[i]));
  }
  absl::Status closed = internal::CloseDb(&db, &handles, path);
  return status.ok() ? closed : status;
}

GraphBuilder::GraphBuilder(std::unique_ptr<Rep> rep) : rep_(std::move(rep)) {}

GraphBuilder::~GraphBuilder() {
  if (!rep_->committed) Abandon();
}

absl::Status GraphBuilderOptions::Validate() const {
  if (num_partitions == 0) {
    return absl::InvalidArgumentError("graph builder: num_partitions must be at least 1");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<GraphBuilder>> GraphBuilder::Create(
    const std::string& out_arg, const GraphBuilderOptions& options) {
  std::string out = out_arg;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (out.empty()) return absl::InvalidArgumentError("empty output path");
  if (options.num_partitions == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("num_partitions must be at least 1 (building ", out, ")"));
  }
  FileSystem* file_system = CurrentFileSystem();
  auto exists = [file_system](const std::string& path) {
    return file_system->Stat(path).value_or(PathKind::kMissing) != PathKind::kMissing;
  };
  if (exists(out) && !options.overwrite) {
    return absl::AlreadyExistsError(absl::StrCat(
        out, " already exists (pass --overwrite to replace it)"));
  }
  if (options.overwrite) RETURN_IF_ERROR(CheckReplaceable(out));
  const fs::path out_path(out);
  std::string parent = out_path.parent_path().string();
  if (parent.empty()) parent = ".";
  RETURN_IF_ERROR(CreateDirs(parent));
  const std::string base = out_path.filename().string();
  RemoveStale(parent, base, "staging");
  // A leftover `<out>.old-<pid>` is garbage only if `out` itself exists (a
  // crash between the two renames of an overwrite leaves the only copy in
  // the .old directory).
  if (exists(out)) RemoveStale(parent, base, "old");

  auto rep = std::make_unique<Rep>();
  rep->out = out;
  rep->options = options;
  rep->staging = absl::StrCat(out, ".staging-", ::getpid());
  rep->runs_dir = rep->staging + "/runs";
  rep->scratch = rep->staging + "/scratch";
  const absl::Status created = file_system->CreateDir(rep->staging);
  if (absl::IsAlreadyExists(created)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "staging directory ", rep->staging,
        " exists: another builder in this process is writing ", out));
  }
  RETURN_IF_ERROR(created);
  // From here on the builder owns the staging directory and removes it on
  // failure.
  std::unique_ptr<GraphBuilder> builder(new GraphBuilder(std::move(rep)));
  for (const std::string* dir : {&builder->rep_->runs_dir,
                                 &builder->rep_->scratch}) {
    RETURN_IF_ERROR(file_system->CreateDir(*dir));
  }
  return builder;
}

absl::StatusOr<std::unique_ptr<GraphBuilder>> GraphBuilder::CreateAppend(
    Graph* graph) {
  auto rep = std::make_unique<Rep>();
  rep->out = graph->dir();
  rep->append = graph;
  rep->options.num_partitions = graph->manifest().num_partitions;
  if (graph->manifest().edge_generation >= kMaxEdgeGeneration) {
    return absl::ResourceExhaustedError(
        absl::StrCat(graph->dir(), " has too many appends"));
  }
  rep->edge_generation = graph->manifest().edge_generation + 1;
  FileSystem* file_system = CurrentFileSystem();
  // Best effort: what an earlier append left.
  for (const std::string& name : file_system->ListDir(graph->dir()).value_or(
           std::vector<std::string>())) {
    if (name.rfind("append-", 0) == 0) {
      file_system->RemoveAll(absl::StrCat(graph->dir(), "/", name)).IgnoreError();
    }
  }
  rep->staging = absl::StrCat(graph->dir(), "/append-", ::getpid());
  rep->runs_dir = rep->staging + "/runs";
  rep->scratch = rep->staging + "/scratch";
  for (const std::string* dir : {&rep->staging, &rep->runs_dir, &rep->scratch}) {
    RETURN_IF_ERROR(file_system->CreateDir(*dir));
  }
  return std::unique_ptr<GraphBuilder>(new GraphBuilder(std::move(rep)));
}

const std::string& GraphBuilder::scratch_dir() const { return rep_->scratch; }

absl::StatusOr<std::unique_ptr<SortedRunWriter>> GraphBuilder::NewRun(
    RunTarget target, uint32_t partition) {
  if (IsDictTarget(target)) {
    partition = 0;
  } else if (partition >= rep_->options.num_partitions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run for ", TargetName(target), " of partition ", partition,
        ", but the graph has ", rep_->options.num_partitions, " partitions"));
  }
  auto state = std::make_shared<RunState>();
  state->target = target;
  state->partition = partition;
  {
    MutexLock lock(&rep_->mu);
    if (rep_->committed) {
      return absl::FailedPreconditionError(
          absl::StrCat("NewRun after Commit of ", rep_->out));
    }
    state->path = absl::StrCat(rep_->runs_dir, "/", TargetName(target), "-",
                               partition, "-", rep_->next_run++, ".sst");
    rep_->runs.push_back(state);
  }
  return std::unique_ptr<SortedRunWriter>(new SstRunWriter(std::move(state)));
}

absl::StatusOr<std::unique_ptr<NodeWriter>> GraphBuilder::NewNodeWriter() {
  const uint32_t num_p = rep_->options.num_partitions;
  std::vector<std::unique_ptr<SortedRunWriter>> nodes(num_p), by_id(num_p);
  for (uint32_t p = 0; p < num_p; ++p) {
    ASSIGN_OR_RETURN(nodes[p], NewRun(RunTarget::kShardNodes, p));
    ASSIGN_OR_RETURN(by_id[p], NewRun(RunTarget::kDictById, p));
  }
  ASSIGN_OR_RETURN(auto by_name, NewRun(RunTarget::kDictByName, 0));
  return std::make_unique<NodeWriter>(std::move(nodes), std::move(by_id), std::move(by_name));
}

absl::StatusOr<std::unique_ptr<EdgeRunWriter>> GraphBuilder::NewEdgeRun(
    uint32_t src_partition) {
  ASSIGN_OR_RETURN(auto run, NewRun(RunTarget::kShardEdges, src_partition));
  uint64_t chunk;
  {
    MutexLock lock(&rep_->mu);
    std::vector<uint64_t>& next = rep_->next_edge_chunk;
    if (next.size() <= src_partition) next.resize(src_partition + 1, 0);
    chunk = next[src_partition]++;
  }
  if (chunk > kMaxEdgeChunk) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "too many edge chunks for partition ", src_partition, " of ", rep_->out));
  }
  return std::make_unique<EdgeRunWriter>(std::move(run),
                                         EdgeBlockSeq(rep_->edge_generation, chunk, 0));
}

absl::StatusOr<std::unique_ptr<FeatureRunWriter>> GraphBuilder::NewFeatureRun(
    uint32_t partition) {
  ASSIGN_OR_RETURN(auto run, NewRun(RunTarget::kShardFeatures, partition));
  return std::make_unique<FeatureRunWriter>(std::move(run));
}

uint32_t GraphBuilder::edge_generation() const { return rep_->edge_generation; }

absl::Status GraphBuilder::WriteFeatureVocabulary(std::string_view names) {
  return WriteBlob(kFeatureVocabBlob, names);
}

absl::Status GraphBuilder::SetNumPartitions(uint32_t num_partitions) {
  if (num_partitions == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "num_partitions must be at least 1 (building ", rep_->out, ")"));
  }
  if (rep_->append != nullptr) {
    return absl::FailedPreconditionError(absl::StrCat(
        "cannot change the partition count of ", rep_->out, " when appending"));
  }
  MutexLock lock(&rep_->mu);
  for (const auto& run : rep_->runs) {
    if (!IsDictTarget(run->target)) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot change the partition count of ", rep_->out,
          " after a shard run was started"));
    }
  }
  rep_->options.num_partitions = num_partitions;
  return absl::OkStatus();
}

absl::Status GraphBuilder::WriteBlob(std::string_view name,
                                     std::string_view bytes) {
  if (rep_->append != nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        "GraphBuilder::WriteBlob is not supported when appending to ",
        rep_->out));
  }
  bool ok = !name.empty() && name.size() <= 200 && name != "." && name != "..";
  for (char c : name) {
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' ||
                c == '_' || c == '-');
  }
  if (!ok) {
    return absl::InvalidArgumentError(absl::StrCat(
        "blob name '", internal::Sv(name),
        "' must be 1..200 characters of [A-Za-z0-9._-]"));
  }
  {
    MutexLock lock(&rep_->mu);
    if (rep_->committed) {
      return absl::FailedPreconditionError(
          absl::StrCat("WriteBlob after Commit of ", rep_->out));
    }
  }
  const std::string dir = rep_->staging + "/blobs";
  RETURN_IF_ERROR(CreateDirs(dir));
  return internal::WriteFileAtomic(absl::StrCat(dir, "/", internal::Sv(name)),
                                   bytes);
}

absl::Status GraphBuilder::Commit(const Manifest& manifest) {
  Rep& r = *rep_;
  if (r.committed) {
    return absl::FailedPreconditionError(
        absl::StrCat("Commit called twice for ", r.out));
  }
  FileSystem* file_system = CurrentFileSystem();
  if (file_system->Stat(r.staging).value_or(PathKind::kMissing) != PathKind::kDirectory) {
    return absl::FailedPreconditionError(absl::StrCat(
        "staging directory ", r.staging, " is gone (builder abandoned?)"));
  }
  if (manifest.num_partitions != r.options.num_partitions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "manifest has ", manifest.num_partitions,
        " partitions, the builder for ", r.out, " was created with ",
        r.options.num_partitions));
  }
  absl::Status valid = manifest.Validate();
  if (!valid.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "manifest for ", r.out, " is inconsistent: ", valid.message()));
  }

  // Collect finished runs per DB and column family.
  const uint32_t num_p = r.options.num_partitions;
  const auto& shard_cfs = internal::ShardColumnFamilies();
  std::vector<std::vector<std::string>> dict_files(2);
  std::vector<std::vector<std::vector<std::string>>> shard_files(
      num_p, std::vector<std::vector<std::string>>(shard_cfs.size()));
  {
    MutexLock lock(&r.mu);
    for (const std::shared_ptr<RunState>& run : r.runs) {
      if (run->open.load()) {
        return absl::FailedPreconditionError(absl::StrCat(
            "Commit of ", r.out, " while run ", run->path,
            " is still being written (call Finish or destroy its writer)"));
      }
      if (!run->has_file.load()) continue;
      switch (run->target) {
        case RunTarget::kDictByName:
          dict_files[0].push_back(run->path);
          break;
        case RunTarget::kDictById:
          dict_files[1].push_back(run->path);
          break;
        case RunTarget::kShardNodes:
          shard_files[run->partition][0].push_back(run->path);
          break;
        case RunTarget::kShardEdges:
          shard_files[run->partition][1].push_back(run->path);
          break;
        case RunTarget::kShardFeatures:
          shard_files[run->partition][2].push_back(run->path);
          break;
      }
    }
    // Ingested or not, these runs are consumed by this Commit attempt.
    r.runs.clear();
  }

  if (r.append != nullptr) {
    Graph& g = *r.append;
    RETURN_IF_ERROR(g.BeginAppend());
    absl::Status appended = [&]() -> absl::Status {
      RETURN_IF_ERROR(g.IngestRuns("by_id", 0, dict_files[1]));
      RETURN_IF_ERROR(g.IngestRuns("by_name", 0, dict_files[0]));
      for (uint32_t p = 0; p < num_p; ++p) {
        RETURN_IF_ERROR(g.IngestRuns("nodes", p, shard_files[p][0]));
        RETURN_IF_ERROR(g.IngestRuns("features", p, shard_files[p][2]));
        RETURN_IF_ERROR(g.IngestRuns("edges", p, shard_files[p][1]));
      }
      return g.CommitManifest(manifest);
    }();
    // Undone when it did not commit; the next writer's open retries what
    // EndAppend could not finish.
    const absl::Status ended = g.EndAppend();
    if (!appended.ok()) {
      if (!ended.ok()) {
        return absl::Status(appended.code(),
                            absl::StrCat(appended.message(), "; undoing the append failed too (",
                                         ended.message(), "): the next read-write open of ",
                                         r.out, " undoes it"));
      }
      return appended;
    }
    // Committed: a copy left behind (its removal failed) is dropped by the
    // next writer's open, which finds the manifest past its generation.
    ended.IgnoreError();
    r.committed = true;
    file_system->RemoveAll(r.staging).IgnoreError();
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(r.BuildDb(internal::DictDirName(),
                            internal::DictColumnFamilies(), dict_files));
  for (uint32_t p = 0; p < num_p; ++p) {
    RETURN_IF_ERROR(r.BuildDb(internal::ShardDirName(p), shard_cfs,
                              shard_files[p]));
  }
  RETURN_IF_ERROR(
      WriteManifestAtomic(absl::StrCat(r.staging, "/MANIFEST.json"), manifest));
  for (const std::string* dir : {&r.runs_dir, &r.scratch}) {
    RETURN_IF_ERROR(file_system->RemoveAll(*dir));
  }
  RETURN_IF_ERROR(FsyncTree(r.staging));

  // The rename is the commit point.
  const std::string parent = internal::ParentDir(r.out);
  if (r.options.overwrite &&
      file_system->Stat(r.out).value_or(PathKind::kMissing) != PathKind::kMissing) {
    // Again at the commit point: `out` may have changed since Create.
    RETURN_IF_ERROR(CheckReplaceable(r.out));
    const std::string old = absl::StrCat(r.out, ".old-", ::getpid());
    file_system->RemoveAll(old).IgnoreError();
    const absl::Status aside = file_system->Rename(r.out, old);
    if (!aside.ok()) {
      return absl::Status(aside.code(), absl::StrCat("cannot move the existing graph aside to ",
                                                     old, ": ", aside.message()));
    }
    const absl::Status moved = file_system->Rename(r.staging, r.out);
    if (!moved.ok()) {
      file_system->Rename(old, r.out).IgnoreError();  // put the old graph back
      return moved;
    }
    const absl::Status synced = file_system->SyncPath(parent);
    if (!synced.ok()) {
      // The renames may not survive a crash: put the old graph back, and
      // the new one back into staging (removed with the builder).
      file_system->Rename(r.out, r.staging).IgnoreError();
      file_system->Rename(old, r.out).IgnoreError();
      return synced;
    }
    r.committed = true;
    const absl::Status removed = file_system->RemoveAll(old);
    if (!removed.ok()) {
      return absl::Status(removed.code(), absl::StrCat("committed ", r.out,
                                                       " but cannot remove the old graph ",
                                                       old, ": ", removed.message()));
    }
    return absl::OkStatus();
  }
  // RENAME_NOREPLACE: never replace a graph that appeared since Create.
  RETURN_IF_ERROR(file_system->RenameNoReplace(r.staging, r.out));
  const absl::Status synced = file_system->SyncPath(parent);
  if (!synced.ok()) {
    // The rename may not survive a crash: nothing where the graph would go
    // (the staging directory is removed with the builder).
    file_system->Rename(r.out, r.staging).IgnoreError();
    return synced;
  }
  r.committed = true;
  return absl::OkStatus();
}

void GraphBuilder::Abandon() {
  if (rep_->committed) return;
  CurrentFileSystem()->RemoveAll(rep_->staging).IgnoreError();
}

}  // namespace ember
