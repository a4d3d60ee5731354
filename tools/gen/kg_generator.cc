// The in-memory half of `ember gen kg`: options, the relation plan, fact
// generation, splitting. Writing the files is in kg_output.cc.
#include "tools/gen/kg_generator.h"

#include <algorithm>
#include <cmath>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "storage/base/parallel.h"
#include "storage/base/status_macros.h"
#include "tbb/task_arena.h"
#include "tools/gen/gen_random.h"

namespace ember::tools::gen {
namespace {

// Stream tags: independent random streams derived from the one seed.
constexpr uint64_t kTypeStream = 0x4b475459'50455321ULL;   // "KGTYPES!"
constexpr uint64_t kFactStream = 0x4b474641'43545321ULL;   // "KGFACTS!"
constexpr uint64_t kSplitStream = 0x4b475350'4c495421ULL;  // "KGSPLIT!"

constexpr uint64_t kMaxNodes = uint64_t{1} << 31;
constexpr uint32_t kMaxTypes = 1u << 16;
constexpr uint32_t kMaxRelations = 1u << 20;
constexpr uint32_t kMinMixTotal = 7;

using Pair = std::pair<uint32_t, uint32_t>;  // (src, dst)

// Draws ranks in [0, limit) with weight (r + 1)^-s, by binary search in
// the cumulative weights. Immutable and thread-safe.
class ZipfRanks {
 public:
  ZipfRanks(uint64_t max_limit, double s) : cdf_(max_limit) {
    double acc = 0;
    for (uint64_t r = 0; r < max_limit; ++r) {
      acc += std::pow(static_cast<double>(r + 1), -s);
      cdf_[r] = acc;
    }
  }

  // REQUIRES: 1 <= limit <= max_limit.
  uint64_t Draw(uint64_t limit, Xoshiro256& rng) const {
    const double u = rng.Uniform() * cdf_[limit - 1];
    const auto it = std::upper_bound(cdf_.begin(), cdf_.begin() + limit, u);
    return std::min<uint64_t>(it - cdf_.begin(), limit - 1);
  }

 private:
  std::vector<double> cdf_;
};

// Entity sampling by type, uniform or by popularity.
class EntityDraws {
 public:
  explicit EntityDraws(const KgOptions& o)
      : o_(o), zipf_(o.type_size(0), o.popularity_exponent) {}

  uint32_t Id(uint32_t type, uint64_t rank) const {
    return static_cast<uint32_t>(rank * o_.types + type);
  }
  uint32_t Uniform(uint32_t type, Xoshiro256& rng) const {
    return Id(type, rng.Below(o_.type_size(type)));
  }
  uint32_t Popular(uint32_t type, Xoshiro256& rng) const {
    return Id(type, zipf_.Draw(o_.type_size(type), rng));
  }
  // A popular entity of `type` with rank < `limit`. REQUIRES: limit >= 1.
  uint32_t PopularBelow(uint32_t type, uint64_t limit, Xoshiro256& rng) const {
    return Id(type, zipf_.Draw(limit, rng));
  }

 private:
  const KgOptions& o_;
  ZipfRanks zipf_;  // type 0 is the largest type
};

// A type in [0, types) other than those in `not_these` (sorted, distinct,
// fewer than `types`).
uint32_t OtherType(uint32_t types, std::vector<uint32_t> not_these,
                   Xoshiro256& rng) {
  std::sort(not_these.begin(), not_these.end());
  uint32_t t = static_cast<uint32_t>(rng.Below(types - not_these.size()));
  for (uint32_t skip : not_these) t += t >= skip ? 1 : 0;
  return t;
}

void SortUnique(std::vector<Pair>* v) {
  std::sort(v->begin(), v->end());
  v->erase(std::unique(v->begin(), v->end()), v->end());
}

// The relations in output order, with names, partners and types.
std::vector<KgRelation> PlanRelations(const KgOptions& o) {
  const KgRelationMix& m = o.mix;
  std::vector<KgRelation> rels;
  auto add = [&rels](std::string name, KgKind kind, std::string partner) {
    rels.push_back({std::move(name), kind, std::move(partner), 0, 0});
    return &rels.back();
  };
  for (uint32_t k = 0; k < m.inverse_pairs; ++k) {
    add(absl::StrCat("inv", k, "_fwd"), KgKind::kInverse,
        absl::StrCat("inv", k, "_rev"));
    add(absl::StrCat("inv", k, "_rev"), KgKind::kInverse,
        absl::StrCat("inv", k, "_fwd"));
  }
  for (uint32_t k = 0; k < m.symmetric; ++k) {
    add(absl::StrCat("sym", k), KgKind::kSymmetric, "-");
  }
  for (uint32_t k = 0; k < m.hierarchies; ++k) {
    add(absl::StrCat("hyper", k), KgKind::kHierarchy, "-");
  }
  for (uint32_t k = 0; k < m.plain; ++k) {
    add(absl::StrCat("plain", k), KgKind::kPlain, "-");
  }
  for (uint32_t k = 0; k < m.functional; ++k) {
    add(absl::StrCat("func", k), KgKind::kFunctional, "-");
  }
  for (uint32_t k = 0; k < m.compositions; ++k) {
    add(absl::StrCat("comp", k), KgKind::kComposition,
        absl::StrCat("plain", k, ",func", k));
  }
  // Types: A -> B with A != B; a symmetric relation stays inside A. The
  // first `compositions` plain/func relations are chained A -> B -> C.
  const size_t first_plain = 2 * m.inverse_pairs + m.symmetric + m.hierarchies;
  const size_t first_func = first_plain + m.plain;
  const size_t first_comp = first_func + m.functional;
  for (size_t i = 0; i < rels.size(); ++i) {
    KgRelation& r = rels[i];
    Xoshiro256 rng(StreamKey(o.seed, kTypeStream, i));
    if (r.kind == KgKind::kHierarchy) continue;
    if (r.kind == KgKind::kInverse && r.name.ends_with("_rev")) {
      r.domain_type = rels[i - 1].range_type;
      r.range_type = rels[i - 1].domain_type;
      continue;
    }
    r.domain_type = static_cast<uint32_t>(rng.Below(o.types));
    r.range_type = r.kind == KgKind::kSymmetric
                       ? r.domain_type
                       : OtherType(o.types, {r.domain_type}, rng);
    if (r.kind == KgKind::kFunctional && i - first_func < m.compositions) {
      const KgRelation& base = rels[first_plain + (i - first_func)];
      r.domain_type = base.range_type;
      r.range_type =
          OtherType(o.types, {base.domain_type, base.range_type}, rng);
    }
    if (r.kind == KgKind::kComposition) {
      r.domain_type = rels[first_plain + (i - first_comp)].domain_type;
      r.range_type = rels[first_func + (i - first_comp)].range_type;
    }
  }
  return rels;
}

// The sorted, distinct (src, dst) facts of relation `index` for every kind
// but composition (and inverse "_rev", which mirrors "_fwd"). A symmetric
// relation's facts are its (a, b) pairs with a < b.
std::vector<Pair> DrawFacts(const KgOptions& o, const EntityDraws& draw,
                            const KgRelation& r, size_t index) {
  Xoshiro256 rng(StreamKey(o.seed, kFactStream, index));
  std::vector<Pair> facts;
  const uint64_t f = o.facts_per_relation();
  switch (r.kind) {
    case KgKind::kInverse:
    case KgKind::kPlain:
      facts.reserve(f);
      for (uint64_t i = 0; i < f; ++i) {
        const uint32_t h = draw.Uniform(r.domain_type, rng);
        facts.emplace_back(h, draw.Popular(r.range_type, rng));
      }
      break;
    case KgKind::kSymmetric:
      facts.reserve(f);
      for (uint64_t i = 0; i < f; ++i) {
        const uint32_t a = draw.Uniform(r.domain_type, rng);
        const uint32_t b = draw.Popular(r.domain_type, rng);
        if (a != b) facts.emplace_back(std::min(a, b), std::max(a, b));
      }
      break;
    case KgKind::kFunctional:
      for (uint64_t rank = 0; rank < o.type_size(r.domain_type); ++rank) {
        facts.emplace_back(draw.Id(r.domain_type, rank),
                           draw.Popular(r.range_type, rng));
      }
      break;
    case KgKind::kHierarchy:
      for (uint64_t e = 0; e < o.nodes; ++e) {
        const uint32_t type = o.type_of(e);
        const uint64_t rank = o.rank_of(e);
        const int64_t super = KgOptions::supertype(type);
        if (rank == 0 && super < 0) continue;  // entity 0: the root
        const bool same =
            rank > 0 && (super < 0 || rng.Uniform() < o.same_type_parent);
        facts.emplace_back(
            static_cast<uint32_t>(e),
            same ? draw.PopularBelow(type, rank, rng)
                 : draw.Popular(static_cast<uint32_t>(super), rng));
      }
      break;
    case KgKind::kComposition:
      EMBER_CHECK(false);  // built from its bases by Compose
  }
  SortUnique(&facts);
  return facts;
}

// (a, f(b)) for every (a, b) of `first`, where `functional` maps each
// entity of its domain type to its one tail.
std::vector<Pair> Compose(const KgOptions& o, const std::vector<Pair>& first,
                          const std::vector<Pair>& functional) {
  std::vector<uint32_t> tail_by_rank(o.type_size(0));
  for (const auto& [b, c] : functional) tail_by_rank[o.rank_of(b)] = c;
  std::vector<Pair> out;
  out.reserve(first.size());
  for (const auto& [a, b] : first) {
    out.emplace_back(a, tail_by_rank[o.rank_of(b)]);
  }
  SortUnique(&out);
  return out;
}

// Split draws for one relation (or inverse pair): a fact's edges stay in
// train, or exactly one of them goes to `held` and its partner stays.
class SplitDraws {
 public:
  SplitDraws(const KgOptions& o, size_t index)
      : rng_(StreamKey(o.seed, kSplitStream, index)),
        valid_(o.valid_fraction),
        test_(o.test_fraction) {}

  KgSplit Edge() {
    const double u = rng_.Uniform();
    return u < valid_ ? KgSplit::kValid
                      : (u < valid_ + test_ ? KgSplit::kTest : KgSplit::kTrain);
  }
  // Splits of a two-edge fact; the held-out share of edges is still
  // valid / test.
  std::pair<KgSplit, KgSplit> Fact() {
    const double u = rng_.Uniform();
    KgSplit held = KgSplit::kTrain;
    if (u < 2 * valid_) {
      held = KgSplit::kValid;
    } else if (u < 2 * (valid_ + test_)) {
      held = KgSplit::kTest;
    }
    if (held == KgSplit::kTrain) return {held, held};
    return (rng_.Next() & 1) ? std::pair{held, KgSplit::kTrain}
                             : std::pair{KgSplit::kTrain, held};
  }

 private:
  Xoshiro256 rng_;
  double valid_;
  double test_;
};

bool BySrcDst(const KgEdge& a, const KgEdge& b) {
  return std::tie(a.src, a.dst) < std::tie(b.src, b.dst);
}

// The split edges of relation `index` (and of `index + 1` for an inverse
// pair, appended after it), each relation's edges sorted by (src, dst).
std::vector<KgEdge> SplitRelation(const KgOptions& o,
                                  const std::vector<KgRelation>& rels,
                                  size_t index,
                                  const std::vector<Pair>& facts) {
  SplitDraws draws(o, index);
  const uint32_t rel = static_cast<uint32_t>(index);
  std::vector<KgEdge> out;
  switch (rels[index].kind) {
    case KgKind::kInverse: {
      std::vector<KgEdge> rev;
      for (const auto& [h, t] : facts) {
        const auto [fwd_split, rev_split] = draws.Fact();
        out.push_back({h, t, rel, fwd_split});
        rev.push_back({t, h, rel + 1, rev_split});
      }
      std::sort(rev.begin(), rev.end(), BySrcDst);
      out.insert(out.end(), rev.begin(), rev.end());
      break;
    }
    case KgKind::kSymmetric:
      for (const auto& [a, b] : facts) {
        const auto [ab, ba] = draws.Fact();
        out.push_back({a, b, rel, ab});
        out.push_back({b, a, rel, ba});
      }
      std::sort(out.begin(), out.end(), BySrcDst);
      break;
    default:
      for (const auto& [h, t] : facts) out.push_back({h, t, rel, draws.Edge()});
  }
  return out;
}

}  // namespace

const char* KgKindName(KgKind kind) {
  switch (kind) {
    case KgKind::kInverse:
      return "inverse";
    case KgKind::kSymmetric:
      return "symmetric";
    case KgKind::kHierarchy:
      return "hierarchy";
    case KgKind::kPlain:
      return "plain";
    case KgKind::kFunctional:
      return "functional";
    case KgKind::kComposition:
      return "composition";
  }
  return "?";
}

absl::StatusOr<KgRelationMix> KgRelationMix::ForTotal(uint32_t relations) {
  if (relations < kMinMixTotal || relations > kMaxRelations) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen kg: --relations must be in [", kMinMixTotal, ", ", kMaxRelations,
        "] (at least one relation of each kind), got ", relations));
  }
  KgRelationMix m;
  m.hierarchies = std::max(1u, relations / 15);
  m.inverse_pairs = std::max(1u, relations / 6);
  m.symmetric = std::max(1u, (2 * relations + 7) / 15);
  m.compositions = std::max(1u, (2 * relations + 7) / 15);
  m.functional = m.compositions;
  const uint32_t rest =
      2 * m.inverse_pairs + m.symmetric + m.hierarchies + 2 * m.compositions;
  m.plain = relations - rest;  // >= 1 for relations >= 7
  while (m.plain < m.compositions) {
    --m.compositions;
    --m.functional;
    m.plain += 2;
  }
  return m;
}

absl::Status KgRelationMix::Validate() const {
  if (total() < 1 || total() > kMaxRelations) {
    return absl::InvalidArgumentError(
        absl::StrCat("gen kg: the relation mix must hold 1 to ", kMaxRelations,
                     " relations, got ", total()));
  }
  if (plain < compositions || functional < compositions) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen kg: ", compositions,
        " compositions need as many plain and functional relations to "
        "compose, got ",
        plain, " plain and ", functional, " functional"));
  }
  return absl::OkStatus();
}

absl::Status KgOptions::Validate() const {
  if (types < 2 || types > kMaxTypes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen kg: --types must be in [2, ", kMaxTypes, "], got ", types));
  }
  if (nodes < 2 * uint64_t{types} || nodes > kMaxNodes) {
    return absl::InvalidArgumentError(
        absl::StrCat("gen kg: --nodes must be in [2 * --types = ", 2 * types,
                     ", 2^31], got ", nodes));
  }
  RETURN_IF_ERROR(mix.Validate());
  if (mix.compositions > 0 && types < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen kg: compositions chain three distinct types, so --types must be "
        ">= 3, got ",
        types));
  }
  if (!(facts_per_node > 0 && facts_per_node <= 100)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen kg: --facts-per-node must be in (0, 100], got ", facts_per_node));
  }
  if (facts_per_relation() < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen kg: --nodes=", nodes, " * --facts-per-node=", facts_per_node,
        " rounds to no facts per relation"));
  }
  if (!(popularity_exponent >= 0 && popularity_exponent <= 4)) {
    return absl::InvalidArgumentError(
        absl::StrCat("gen kg: --popularity-exponent must be in [0, 4], got ",
                     popularity_exponent));
  }
  if (!(same_type_parent >= 0 && same_type_parent <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen kg: same_type_parent must be in [0, 1], got ", same_type_parent));
  }
  if (!(valid_fraction >= 0 && test_fraction >= 0 &&
        valid_fraction + test_fraction <= 0.5)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gen kg: --valid-fraction and --test-fraction must be >= 0 with a sum "
        "<= 0.5 (a fact's two edges never both leave train), got ",
        valid_fraction, " and ", test_fraction));
  }
  return absl::OkStatus();
}

uint64_t KgOptions::facts_per_relation() const {
  return static_cast<uint64_t>(
      std::llround(facts_per_node * static_cast<double>(nodes)));
}

absl::StatusOr<KgGraph> BuildKg(const KgOptions& options, int threads) {
  RETURN_IF_ERROR(options.Validate());
  KgGraph g;
  g.relations = PlanRelations(options);
  const std::vector<KgRelation>& rels = g.relations;
  const size_t n = rels.size();
  const EntityDraws draw(options);
  std::vector<std::vector<Pair>> facts(n);
  std::vector<std::vector<KgEdge>> split(n);
  auto is_rev = [&rels](size_t i) {
    return rels[i].kind == KgKind::kInverse && rels[i].name.ends_with("_rev");
  };

  tbb::task_arena arena(threads > 0 ? threads
                                    : tbb::this_task_arena::max_concurrency());
  arena.execute([&] {
    ParallelFor(0, n, [&](size_t i) {
      if (rels[i].kind != KgKind::kComposition && !is_rev(i)) {
        facts[i] = DrawFacts(options, draw, rels[i], i);
      }
    });
    const size_t first_plain = 2 * options.mix.inverse_pairs +
                               options.mix.symmetric + options.mix.hierarchies;
    const size_t first_func = first_plain + options.mix.plain;
    const size_t first_comp = first_func + options.mix.functional;
    ParallelFor(0, size_t{options.mix.compositions}, [&](size_t k) {
      facts[first_comp + k] = Compose(options, facts[first_plain + k], facts[first_func + k]);
    });
    ParallelFor(0, n, [&](size_t i) {
      if (!is_rev(i)) split[i] = SplitRelation(options, rels, i, facts[i]);
    });
  });

  size_t total = 0;
  for (const auto& s : split) total += s.size();
  g.edges.reserve(total);
  for (auto& s : split) {
    g.edges.insert(g.edges.end(), s.begin(), s.end());
    std::vector<KgEdge>().swap(s);
  }

  // Held-out edges need both endpoints in train. Train degrees only grow
  // in this pass, so one pass in edge order settles every edge.
  std::vector<uint32_t> train_degree(options.nodes, 0);
  for (const KgEdge& e : g.edges) {
    if (e.split == KgSplit::kTrain) {
      ++train_degree[e.src];
      ++train_degree[e.dst];
    }
  }
  for (KgEdge& e : g.edges) {
    if (e.split == KgSplit::kTrain) continue;
    if (train_degree[e.src] == 0 || train_degree[e.dst] == 0) {
      e.split = KgSplit::kTrain;
      ++train_degree[e.src];
      ++train_degree[e.dst];
      ++g.moved_to_train;
    }
  }
  return g;
}

}  // namespace ember::tools::gen
