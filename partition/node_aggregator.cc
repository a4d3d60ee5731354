#include "partition/node_aggregator.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <queue>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "storage/base/mutex.h"
#include "partition/record_file.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

struct Entry {
  uint64_t degree = 0;
  uint64_t name_offset = 0;  // into the shard's arena
  uint64_t where = 0;        // the first occurrence added
  uint32_t name_length = 0;
  uint16_t type = 0;
  bool in_train = false;
};

// Run record: [key u64][degree u64][where u64][name_length u32][type u16]
// [in_train u8][name].
struct RunHeader {
  uint64_t key;
  uint64_t degree;
  uint64_t where;
  uint32_t name_length;
  uint16_t type;
  uint8_t in_train;
} __attribute__((packed));

absl::Status CollisionError(uint64_t key, std::string_view a,
                            std::string_view b) {
  return absl::FailedPreconditionError(absl::StrCat(
      "node ids '", std::string(a), "' and '", std::string(b), "' have the same 64-bit key ", key,
      "; rename one of them"));
}

absl::Status TypeConflict(const NodeAggregatorOptions& o, std::string_view name, uint64_t key,
                          uint16_t type_a, uint64_t where_a, uint16_t type_b, uint64_t where_b) {
  auto where = [&](uint64_t w) { return o.describe_where ? o.describe_where(w) : absl::StrCat(w); };
  auto type = [&](uint16_t t) { return o.type_name ? o.type_name(t) : absl::StrCat(t); };
  const std::string node = o.integer_ids || name.empty() ? absl::StrCat(key) : std::string(name);
  return absl::InvalidArgumentError(
      absl::StrCat(where(where_b), ": node '", node, "' is of type ", type(type_b),
                   " here (by the schema), but of type ", type(type_a), " at ", where(where_a),
                   "; a node has one type: rename one of them or fix the schema"));
}

// Reads one run file sequentially.
class RunCursor {
 public:
  absl::Status Open(const std::string& path) {
    ASSIGN_OR_RETURN(reader_, RecordReader::Open(path, 256 << 10));
    return Advance();
  }
  bool done() const { return done_; }
  const RunHeader& header() const { return header_; }
  std::string_view name() const { return name_; }
  absl::Status Advance() {
    ASSIGN_OR_RETURN(size_t got, reader_->Read(&header_, sizeof(header_)));
    if (got == 0) {
      done_ = true;
      return absl::OkStatus();
    }
    if (got != sizeof(header_)) {
      return absl::DataLossError("truncated node run");
    }
    name_.resize(header_.name_length);
    return reader_->ReadExactly(name_.data(), name_.size());
  }

 private:
  std::unique_ptr<RecordReader> reader_;
  RunHeader header_{};
  std::string name_;
  bool done_ = false;
};

}  // namespace

struct NodeAggregator::Shard {
  Mutex mu;
  absl::flat_hash_map<uint64_t, Entry> map ABSL_GUARDED_BY(mu);
  std::string arena ABSL_GUARDED_BY(mu);
  std::vector<std::string> runs ABSL_GUARDED_BY(mu);
  absl::Status status ABSL_GUARDED_BY(mu);
  uint64_t bytes() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    return map.capacity() * (sizeof(std::pair<uint64_t, Entry>) + 1) +
           arena.capacity();
  }
};

absl::Status NodeAggregatorOptions::Validate() const {
  if (memory_bytes == 0) {
    return absl::InvalidArgumentError("node aggregator: memory_bytes must be positive");
  }
  if (spill_dir.empty()) return absl::InvalidArgumentError("node aggregator: spill_dir is required");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<NodeAggregator>> NodeAggregator::Make(
    const NodeAggregatorOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  return std::unique_ptr<NodeAggregator>(new NodeAggregator(options));
}

NodeAggregator::NodeAggregator(const NodeAggregatorOptions& options)
    : options_(options) {
  for (int i = 0; i < kNumShards; ++i) shards_.push_back(std::make_unique<Shard>());
}

NodeAggregator::~NodeAggregator() = default;

uint64_t NodeAggregator::runs_spilled() const {
  uint64_t n = 0;
  for (const auto& s : shards_) {
    MutexLock lock(&s->mu);
    n += s->runs.size();
  }
  return n;
}

absl::Status NodeAggregator::Add(std::span<const NodeOccurrence> occurrences) {
  // Bucket by shard, then take each shard's lock once.
  std::vector<uint32_t> counts(kNumShards + 1, 0);
  for (const NodeOccurrence& o : occurrences) ++counts[(o.key >> (64 - kShardBits)) + 1];
  for (int i = 0; i < kNumShards; ++i) counts[i + 1] += counts[i];
  std::vector<uint32_t> order(occurrences.size());
  {
    std::vector<uint32_t> pos(counts.begin(), counts.end() - 1);
    for (uint32_t i = 0; i < occurrences.size(); ++i) {
      order[pos[occurrences[i].key >> (64 - kShardBits)]++] = i;
    }
  }
  const uint64_t shard_budget = std::max<uint64_t>(options_.memory_bytes / kNumShards, 1024);
  for (int s = 0; s < kNumShards; ++s) {
    if (counts[s] == counts[s + 1]) continue;
    Shard& shard = *shards_[s];
    MutexLock lock(&shard.mu);
    RETURN_IF_ERROR(shard.status);
    for (uint32_t k = counts[s]; k < counts[s + 1]; ++k) {
      const NodeOccurrence& o = occurrences[order[k]];
      auto [it, inserted] = shard.map.try_emplace(o.key);
      Entry& e = it->second;
      if (inserted) {
        e.type = o.type;
        e.where = o.where;
      } else if (e.type != o.type) {
        std::string_view name;
        if (!options_.integer_ids) {
          name = std::string_view(shard.arena).substr(e.name_offset, e.name_length);
        }
        shard.status = TypeConflict(options_, name, o.key, e.type, e.where, o.type, o.where);
        return shard.status;
      }
      ++e.degree;
      e.in_train |= o.train;
      if (options_.integer_ids) continue;
      if (inserted) {
        e.name_offset = shard.arena.size();
        e.name_length = o.name.size();
        shard.arena.append(o.name);
      } else if (std::string_view(shard.arena).substr(e.name_offset, e.name_length) != o.name) {
        shard.status = CollisionError(
            o.key, std::string_view(shard.arena).substr(e.name_offset, e.name_length), o.name);
        return shard.status;
      }
    }
    if (shard.bytes() > shard_budget) {
      shard.status = SpillShard(&shard, s);
      RETURN_IF_ERROR(shard.status);
    }
  }
  return absl::OkStatus();
}

absl::Status NodeAggregator::SpillShard(Shard* shard, int index)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  std::vector<std::pair<uint64_t, Entry>> entries(shard->map.begin(), shard->map.end());
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string path = absl::StrCat(options_.spill_dir, "/nodes-", index, "-",
                                  shard->runs.size(), ".run");
  ASSIGN_OR_RETURN(auto writer, RecordWriter::Create(path));
  for (const auto& [key, e] : entries) {
    RunHeader h{key, e.degree, e.where, e.name_length, e.type, e.in_train};
    RETURN_IF_ERROR(writer->Append(&h, sizeof(h)));
    RETURN_IF_ERROR(writer->Append(shard->arena.data() + e.name_offset, e.name_length));
  }
  RETURN_IF_ERROR(writer->Close());
  shard->runs.push_back(path);
  // Release the memory, not just the contents.
  absl::flat_hash_map<uint64_t, Entry>().swap(shard->map);
  std::string().swap(shard->arena);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> NodeAggregator::CountDistinct() {
  ASSIGN_OR_RETURN(const std::vector<uint64_t> by_type, CountDistinctByType());
  uint64_t total = 0;
  for (uint64_t n : by_type) total += n;
  return total;
}

absl::StatusOr<std::vector<uint64_t>> NodeAggregator::CountDistinctByType() {
  std::vector<uint64_t> total;
  auto count = [&total](uint16_t type) {
    if (total.size() <= type) total.resize(type + 1, 0);
    ++total[type];
  };
  for (int s = 0; s < kNumShards; ++s) {
    Shard& shard = *shards_[s];
    MutexLock lock(&shard.mu);
    RETURN_IF_ERROR(shard.status);
    if (shard.runs.empty()) {
      for (const auto& [key, entry] : shard.map) count(entry.type);
      continue;
    }
    std::vector<std::pair<uint64_t, uint16_t>> mem;  // (key, type)
    mem.reserve(shard.map.size());
    for (const auto& [key, entry] : shard.map) mem.emplace_back(key, entry.type);
    std::sort(mem.begin(), mem.end());
    std::vector<RunCursor> cursors(shard.runs.size());
    // (key, run); run == cursors.size() is the in-memory part.
    using Head = std::pair<uint64_t, size_t>;
    std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heap;
    for (size_t r = 0; r < cursors.size(); ++r) {
      RETURN_IF_ERROR(cursors[r].Open(shard.runs[r]));
      if (!cursors[r].done()) heap.push({cursors[r].header().key, r});
    }
    size_t mem_pos = 0;
    if (!mem.empty()) heap.push({mem[0].first, cursors.size()});
    bool any = false;
    uint64_t last = 0;
    while (!heap.empty()) {
      const auto [key, r] = heap.top();
      heap.pop();
      if (!any || key != last) {
        count(r == cursors.size() ? mem[mem_pos].second : cursors[r].header().type);
      }
      any = true;
      last = key;
      if (r == cursors.size()) {
        if (++mem_pos < mem.size()) heap.push({mem[mem_pos].first, r});
      } else {
        RETURN_IF_ERROR(cursors[r].Advance());
        if (!cursors[r].done()) heap.push({cursors[r].header().key, r});
      }
    }
  }
  return total;
}

absl::Status NodeAggregator::ForEachMerged(
    const std::function<absl::Status(const MergedNode&)>& fn) {
  for (int s = 0; s < kNumShards; ++s) {
    Shard& shard = *shards_[s];
    MutexLock lock(&shard.mu);
    RETURN_IF_ERROR(shard.status);
    // The in-memory part, sorted, is one more run (index = runs.size()).
    std::vector<std::pair<uint64_t, Entry>> mem(shard.map.begin(), shard.map.end());
    absl::flat_hash_map<uint64_t, Entry>().swap(shard.map);
    std::sort(mem.begin(), mem.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<RunCursor> cursors(shard.runs.size());
    for (size_t r = 0; r < shard.runs.size(); ++r) {
      RETURN_IF_ERROR(cursors[r].Open(shard.runs[r]));
    }
    size_t mem_pos = 0;
    const int mem_run = static_cast<int>(cursors.size());
    auto key_of = [&](int r) {
      return r == mem_run ? mem[mem_pos].first : cursors[r].header().key;
    };
    auto alive = [&](int r) {
      return r == mem_run ? mem_pos < mem.size() : !cursors[r].done();
    };
    auto greater = [&](int a, int b) { return key_of(a) > key_of(b); };
    std::priority_queue<int, std::vector<int>, decltype(greater)> heap(greater);
    for (int r = 0; r <= mem_run; ++r) {
      if (alive(r)) heap.push(r);
    }
    std::string name;
    while (!heap.empty()) {
      MergedNode node;
      node.key = key_of(heap.top());
      bool first = true;
      while (!heap.empty() && key_of(heap.top()) == node.key) {
        int r = heap.top();
        heap.pop();
        std::string_view run_name;
        uint16_t type;
        uint64_t where;
        if (r == mem_run) {
          const Entry& e = mem[mem_pos].second;
          node.degree += e.degree;
          node.in_train |= e.in_train;
          type = e.type;
          where = e.where;
          run_name = std::string_view(shard.arena).substr(e.name_offset, e.name_length);
        } else {
          node.degree += cursors[r].header().degree;
          node.in_train |= cursors[r].header().in_train != 0;
          type = cursors[r].header().type;
          where = cursors[r].header().where;
          run_name = cursors[r].name();
        }
        if (first) {
          name.assign(run_name);
          node.type = type;
          node.where = where;
          first = false;
        } else if (!options_.integer_ids && run_name != name) {
          return CollisionError(node.key, name, run_name);
        } else if (type != node.type) {
          return TypeConflict(options_, name, node.key, node.type, node.where, type, where);
        }
        if (r == mem_run) {
          ++mem_pos;
        } else {
          RETURN_IF_ERROR(cursors[r].Advance());
        }
        if (alive(r)) heap.push(r);
      }
      node.name = name;
      RETURN_IF_ERROR(fn(node));
    }
    std::string().swap(shard.arena);
  }
  return absl::OkStatus();
}

}  // namespace ember
