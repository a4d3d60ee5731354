#include "train/rank_exchange.h"

#include <unistd.h>

#include <algorithm>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "storage/base/status_macros.h"
#include "storage/table_files.h"

namespace ember {
namespace {

PartitionState ToState(PartitionData&& d) {
  PartitionState s;
  s.partition = d.partition;
  s.rows = d.rows;
  s.dim = static_cast<uint32_t>(d.dim);
  s.embeddings = std::move(d.embeddings);
  s.optimizer = std::move(d.optimizer);
  return s;
}

std::unique_ptr<PartitionData> FromState(PartitionState&& s) {
  auto d = std::make_unique<PartitionData>();
  d->partition = s.partition;
  d->rows = s.rows;
  d->dim = static_cast<int>(s.dim);
  d->embeddings = std::move(s.embeddings);
  d->optimizer = std::move(s.optimizer);
  return d;
}

// What of the graph must agree across ranks, one "name=value" per field.
std::vector<std::pair<std::string, std::string>> Identity(const Graph& graph) {
  const Manifest& m = graph.manifest();
  return {{"nodes", absl::StrCat(m.num_nodes)},
          {"partitions", absl::StrCat(m.num_partitions)},
          {"relations", absl::StrCat(m.relations.size(), ":", absl::StrJoin(m.relations, ","))},
          {"edges", absl::StrCat(m.edges.train, "/", m.edges.valid, "/", m.edges.test)},
          {"edge_generation", absl::StrCat(m.edge_generation)},
          {"partition_sizes", absl::StrJoin(m.partition_sizes, ",")},
          {"train_bucket_edges", absl::StrJoin(m.train_bucket_edges, ",")},
          {"checkpoint_version", absl::StrCat(m.training.checkpoint_version)}};
}

std::string Shorten(const std::string& s) {
  return s.size() <= 60 ? s : s.substr(0, 57) + "...";
}

}  // namespace

absl::StatusOr<PendingMoves> StartMoves(Cluster& cluster, PartitionBuffer& buffer,
                                        std::span<const Transfer> transfers, bool read_absent) {
  PartitionTransport& t = *cluster.transport();
  const uint32_t me = cluster.rank();
  PendingMoves moves;
  for (const Transfer& x : transfers) {
    if (x.to == me) moves.receives.emplace_back(x.partition, t.Receive(x.from, x.partition));
  }
  for (const Transfer& x : transfers) {
    if (x.from != me) continue;
    ASSIGN_OR_RETURN(std::unique_ptr<PartitionData> data,
                     read_absent ? buffer.TakeOrRead(x.partition) : buffer.Take(x.partition));
    if (data == nullptr) {
      return absl::InternalError(absl::StrCat("rank ", me, " must send partition ", x.partition,
                                              " to rank ", x.to, " but does not hold it"));
    }
    moves.bytes_sent += (data->embeddings.size() + data->optimizer.size()) * sizeof(float);
    moves.sends.push_back(t.Send(x.to, ToState(std::move(*data))));
  }
  return moves;
}

absl::Status FinishMoves(PartitionBuffer& buffer, PendingMoves& moves, absl::Duration timeout) {
  for (auto& [p, h] : moves.receives) {
    RETURN_IF_ERROR(h.Wait(timeout));
    PartitionState s = h.TakeState();
    if (s.partition != p) {
      return absl::DataLossError(
          absl::StrCat("expected partition ", p, " and received partition ", s.partition));
    }
    RETURN_IF_ERROR(buffer.Put(FromState(std::move(s))));
  }
  for (TransportHandle& h : moves.sends) RETURN_IF_ERROR(h.Wait(timeout));
  moves = PendingMoves();
  return absl::OkStatus();
}

std::vector<Transfer> TransfersOf(const GlobalRound& round, bool overlapped) {
  std::vector<Transfer> out;
  for (const Transfer& t : round.transfers) {
    if (t.overlapped == overlapped) out.push_back(t);
  }
  return out;
}

absl::Status SendCopyForWriting(Cluster& cluster, PartitionBuffer& buffer, uint32_t p, uint32_t to,
                                absl::Duration timeout, bool read_absent) {
  const uint32_t me = cluster.rank();
  ASSIGN_OR_RETURN(std::vector<uint32_t> resident, buffer.Resident());
  std::unique_ptr<PartitionData> read;
  if (!std::binary_search(resident.begin(), resident.end(), p)) {
    if (!read_absent) {
      return absl::InternalError(
          absl::StrCat("rank ", me, " holds partition ", p, " by the schedule but not in memory"));
    }
    ASSIGN_OR_RETURN(read, buffer.TakeOrRead(p));
  }
  const PartitionData& d = read != nullptr ? *read : *buffer.Get(p);
  PartitionState copy;
  copy.partition = p;
  copy.rows = d.rows;
  copy.dim = static_cast<uint32_t>(d.dim);
  copy.embeddings = d.embeddings;
  copy.optimizer = d.optimizer;
  TransportHandle h = cluster.transport()->Send(to, std::move(copy));
  return h.Wait(timeout);
}

absl::Status ReceiveAndWrite(Cluster& cluster, PartitionBuffer& buffer, uint32_t p, uint32_t from,
                             absl::Duration timeout) {
  TransportHandle h = cluster.transport()->Receive(from, p);
  RETURN_IF_ERROR(h.Wait(timeout));
  std::unique_ptr<PartitionData> d = FromState(h.TakeState());
  if (d->partition != p) {
    return absl::DataLossError(absl::StrCat("rank ", cluster.rank(), " expected partition ", p,
                                            " from rank ", from, " and received partition ",
                                            d->partition));
  }
  return buffer.WriteCopy(*d);
}

absl::Status WritePartitionsAtRankZero(Cluster& cluster, PartitionBuffer& buffer,
                                       std::span<const uint32_t> holders, absl::Duration timeout,
                                       const std::function<void(uint32_t)>& written) {
  const uint32_t me = cluster.rank();
  // This rank's part in writing partition p: rank 0 writes it, its holder
  // (another rank) sends rank 0 a copy, the other ranks have none.
  auto part = [&](uint32_t p) -> absl::Status {
    const uint32_t holder = holders[p];
    if (me == 0 && holder == 0) return buffer.WriteDurably(p);
    if (me == holder) return SendCopyForWriting(cluster, buffer, p, 0, timeout);
    if (me == 0) return ReceiveAndWrite(cluster, buffer, p, holder, timeout);
    return absl::OkStatus();
  };
  for (uint32_t p = 0; p < holders.size(); ++p) {
    RETURN_IF_ERROR(AgreeOnStatus(cluster, part(p)));
    if (written) written(p);
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> SharesRankZeroGraph(Cluster& cluster, Graph& graph) {
  std::string name;
  absl::Status made = absl::OkStatus();
  if (cluster.rank() == 0) {
    // A name no other run used: rank 0's pid and 64 random bits.
    std::random_device random;
    const uint64_t bits = (uint64_t{random()} << 32) | random();
    name = absl::StrCat("ranks-", ::getpid(), "-", absl::Hex(bits, absl::kZeroPad16));
    made = WriteIncomingMarker(graph.dir(), name);
  }
  RETURN_IF_ERROR(AgreeOnStatus(cluster, made));
  ASSIGN_OR_RETURN(const std::vector<std::string> names, cluster.AllGather(name));
  absl::StatusOr<bool> seen = SeesIncomingMarker(graph.dir(), names[0]);
  RETURN_IF_ERROR(AgreeOnStatus(cluster, seen.status()));
  ASSIGN_OR_RETURN(const std::vector<std::string> votes,
                   cluster.AllGather(*seen ? std::string("1") : std::string("0")));
  RETURN_IF_ERROR(AgreeOnStatus(
      cluster, cluster.rank() == 0 ? graph.RemoveIncomingTables() : absl::OkStatus()));
  return std::all_of(votes.begin(), votes.end(), [](const std::string& v) { return v == "1"; });
}

absl::Status AgreeOnStatus(Cluster& cluster, const absl::Status& mine) {
  const std::string word = mine.ok() ? std::string()
                                     : absl::StrCat(static_cast<int>(mine.code()), " ",
                                                    cluster.where(), ": ", mine.message());
  ASSIGN_OR_RETURN(const std::vector<std::string> all, cluster.AllGather(word));
  for (uint32_t r = 0; r < all.size(); ++r) {
    if (all[r].empty()) continue;
    if (r == cluster.rank()) return mine;
    const size_t space = all[r].find(' ');
    const int code = std::atoi(all[r].substr(0, space).c_str());
    return absl::Status(static_cast<absl::StatusCode>(code),
                        absl::StrCat("rank ", r, " (", all[r].substr(space + 1), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckRanksAgree(Cluster& cluster, const Graph& graph,
                             std::span<const RankSetting> settings) {
  // Lines: the graph directory, where the rank runs, then "g<field>=<value>"
  // per graph field and "s<index>=<value>\t<detail>" per setting.
  std::string line = graph.dir() + "\n" + cluster.where();
  for (const auto& [k, v] : Identity(graph)) absl::StrAppend(&line, "\ng", k, "=", v);
  for (size_t i = 0; i < settings.size(); ++i) {
    absl::StrAppend(&line, "\ns", i, "=", settings[i].value, "\t", settings[i].detail);
  }
  ASSIGN_OR_RETURN(const std::vector<std::string> all, cluster.AllGather(line));
  const std::vector<std::string> first = absl::StrSplit(all[0], '\n');
  for (uint32_t r = 1; r < all.size(); ++r) {
    const std::vector<std::string> other = absl::StrSplit(all[r], '\n');
    const std::string them = absl::StrCat("rank ", r, " (", other[1], ", ", other[0], ")");
    const std::string zero = absl::StrCat("rank 0 (", first[1], ", ", first[0], ")");
    if (other.size() != first.size()) {
      return absl::FailedPreconditionError(
          absl::StrCat(them, " compares ", other.size() - 2, " settings with ", zero,
                       ", which has ", first.size() - 2, "; run one ember build on every rank"));
    }
    for (size_t i = 2; i < first.size(); ++i) {
      const size_t eq = first[i].find('=');
      const std::string field = first[i].substr(1, eq - 1);
      if (first[i][0] == 'g') {
        if (first[i] == other[i]) continue;
        return absl::FailedPreconditionError(absl::StrCat(
            them, " has a different copy of the graph than ", zero, ": ", field, " ",
            Shorten(other[i].substr(eq + 1)), " against ", Shorten(first[i].substr(eq + 1)),
            "; give every rank the same graph (one shared path, or identical copies)"));
      }
      // A setting: the line up to its tab is compared, the detail is not.
      auto compared = [](const std::string& l) { return l.substr(0, l.find('\t')); };
      if (compared(first[i]) == compared(other[i])) continue;
      size_t index = 0;
      if (!absl::SimpleAtoi(field, &index) || index >= settings.size()) {
        return absl::InternalError(absl::StrCat("rank agreement: bad setting line ", first[i]));
      }
      const RankSetting& s = settings[index];
      // "<option> <value><detail>" from a line "s<index>=<value>\t<detail>".
      auto shown = [&](const std::string& l) {
        const size_t tab = l.find('\t');
        const size_t value = l.find('=') + 1;
        return absl::StrCat(s.option, " ", Shorten(l.substr(value, tab - value)),
                            tab == std::string::npos ? "" : l.substr(tab + 1));
      };
      return absl::FailedPreconditionError(absl::StrCat(
          them, " trains with ", shown(other[i]), ", ", zero, " with ", shown(first[i]),
          "; give every rank the same ", s.fix.empty() ? s.option : s.fix));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> HoldersAtEpoch(RankScheduleOptions options, int epoch) {
  options.holders = DefaultHolders(options.num_partitions, options.world_size);
  for (int e = 0; e < epoch; ++e) {
    options.epoch = static_cast<uint64_t>(e);
    ASSIGN_OR_RETURN(RankSchedule s, ComputeRankSchedule(options));
    options.holders = std::move(s.final_holders);
  }
  return options.holders;
}

}  // namespace ember
