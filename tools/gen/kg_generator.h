// Synthetic multi-relation knowledge graph with known structure
// (`ember gen kg`), for measuring and tuning KG models (ComplEx, DistMult,
// TransE) on relation patterns whose ground truth is known.
//
// Entities. Ids 0 .. N-1; entity i has type i % T and rank i / T within its
// type. Types form a binary tree rooted at type 0: the supertype of type
// t > 0 is (t - 1) / 2. Popularity is Zipf-like by rank: wherever an entity
// of a type is "drawn", rank r has weight (r + 1)^-s (s =
// popularity_exponent), so low ids are hubs and degrees are heavy-tailed.
// "Uniform" draws ignore popularity.
//
// Relations, in output order (names make the kind obvious):
//  - inverse pairs   inv<k>_fwd / inv<k>_rev: F facts (h, t) with h uniform
//                    in a domain type A and t drawn from a range type B != A;
//                    each fact gives (h inv<k>_fwd t) and (t inv<k>_rev h).
//  - symmetric       sym<k>: F facts {a, b}, a uniform and b drawn from one
//                    type, a != b; each gives (a sym<k> b) and (b sym<k> a).
//  - hierarchy       hyper<k>: an is_a tree rooted at entity 0. Every other
//                    entity has exactly one parent: with probability
//                    same_type_parent one drawn among the entities of its
//                    own type with smaller rank, else one drawn from its
//                    supertype (whichever exists). Parents strictly decrease
//                    (type depth, rank), so there are no cycles. Edges are
//                    (child hyper<k> parent).
//  - plain           plain<k>: F facts A -> B, A != B, head uniform, tail
//                    drawn (heavy-tailed in-degree). Antisymmetric since the
//                    types differ.
//  - functional      func<k>: N-to-1, A -> B, A != B: every entity of A has
//                    exactly one tail, drawn from B.
//  - composition     comp<k> = plain<k> ∘ func<k>: plain<k> is A -> B and
//                    func<k> is B -> C (C != A); for every (a plain<k> b) the
//                    graph has (a comp<k> f(b)), f = func<k>. So the rule
//                    holds exactly and |comp<k>| <= |plain<k>|.
// F = round(facts_per_node * N). Facts are drawn with replacement and then
// deduplicated, so a relation has at most F facts. The default mix (30
// relations: 5 inverse pairs, 4 symmetric, 2 hierarchies, 6 plain, 4
// functional, 4 compositions) gives about 300k edges at N = 20000.
//
// Splits. Each edge goes to valid with probability valid_fraction and to
// test with test_fraction, except that the two edges of an inverse or
// symmetric fact are split together: at most one of them is held out, and
// its partner (the inverse or mirror edge) stays in train. A held-out edge
// with an endpoint that has no train edge is then moved to train, so every
// node of a held-out edge appears in train.
//
// Everything is a pure function of (options, seed): each relation draws
// from its own random stream, so the output is byte-identical for any
// thread count. The graph is built in memory (about 16 bytes per edge).
#ifndef EMBER_TOOLS_GEN_KG_GENERATOR_H_
#define EMBER_TOOLS_GEN_KG_GENERATOR_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tools/gen/gen_output.h"

namespace ember::tools::gen {

// How many relations of each kind. total() is the relation count.
struct KgRelationMix {
  // Inverse pairs; each pair is two relations. Default: 5.
  uint32_t inverse_pairs = 5;
  // Symmetric relations. Default: 4.
  uint32_t symmetric = 4;
  // Hierarchy (is_a forest) relations. Default: 2.
  uint32_t hierarchies = 2;
  // Plain antisymmetric relations; must be >= compositions (composition k
  // composes plain<k>). Default: 6.
  uint32_t plain = 6;
  // Functional (N-to-1) relations; must be >= compositions. Default: 4.
  uint32_t functional = 4;
  // Composition relations. Default: 4.
  uint32_t compositions = 4;

  uint32_t total() const {
    return 2 * inverse_pairs + symmetric + hierarchies + plain + functional +
           compositions;
  }

  // The mix for `relations` in total, in the default proportions (1/3 in
  // inverse pairs, 2/15 symmetric, 1/15 hierarchies, 2/15 compositions with
  // as many functional relations, the rest plain). ForTotal(30) is the
  // default mix. Fails (naming --relations) for fewer than 7, the least that
  // holds one relation of every kind.
  static absl::StatusOr<KgRelationMix> ForTotal(uint32_t relations);

  absl::Status Validate() const;
};

struct KgOptions {
  // Entity count N, in [2 * types, 2^31]. Default: 20000.
  uint64_t nodes = 20000;

  // Entity type count T, in [2, 65536]; >= 3 when there are compositions
  // (A, B, C distinct). Default: 8.
  uint32_t types = 8;

  // Relations by kind. Default: KgRelationMix{} (30 relations).
  KgRelationMix mix;

  // Facts per inverse pair, symmetric and plain relation, as a multiple of
  // N, in (0, 100]. Default: 0.5.
  double facts_per_node = 0.5;

  // Zipf exponent s of entity popularity, in [0, 4]; 0 is uniform, larger
  // is more skewed. Default: 1.0.
  double popularity_exponent = 1.0;

  // Hierarchies: probability in [0, 1] that a parent comes from the
  // entity's own type rather than its supertype. Default: 0.5.
  double same_type_parent = 0.5;

  // Share of edges held out for validation and for test; each in [0, 0.5]
  // with valid + test <= 0.5 (a fact's two edges never both leave train).
  // Default: 0.05 each.
  double valid_fraction = 0.05;
  double test_fraction = 0.05;

  // Random seed; the same seed (and options) gives byte-identical output.
  // Default: 0.
  uint64_t seed = 0;

  absl::Status Validate() const;

  uint64_t facts_per_relation() const;
  uint32_t type_of(uint64_t entity) const {
    return static_cast<uint32_t>(entity % types);
  }
  uint64_t rank_of(uint64_t entity) const { return entity / types; }
  // Entities of type t: ranks 0 .. type_size(t) - 1.
  uint64_t type_size(uint32_t t) const {
    return nodes / types + (t < nodes % types ? 1 : 0);
  }
  // -1 for the root type 0.
  static int64_t supertype(uint32_t t) {
    return t == 0 ? -1 : static_cast<int64_t>((t - 1) / 2);
  }
};

enum class KgKind {
  kInverse,
  kSymmetric,
  kHierarchy,
  kPlain,
  kFunctional,
  kComposition
};

// "inverse", "symmetric", "hierarchy", "plain", "functional", "composition".
const char* KgKindName(KgKind kind);

struct KgRelation {
  std::string name;  // e.g. "inv3_fwd", "sym0", "comp1"
  KgKind kind = KgKind::kPlain;
  // The inverse relation's name for inverse pairs, "plain<k>,func<k>"
  // (applied in that order) for compositions, "-" otherwise.
  std::string partner;
  // Types of heads and tails (a hierarchy's tails are of the head's type or
  // its supertype; its domain_type and range_type are both 0 and unused).
  uint32_t domain_type = 0;
  uint32_t range_type = 0;
};

enum class KgSplit : uint8_t { kTrain = 0, kValid = 1, kTest = 2 };

struct KgEdge {
  uint32_t src = 0;
  uint32_t dst = 0;
  uint32_t relation = 0;  // index into KgGraph::relations
  KgSplit split = KgSplit::kTrain;
};

struct KgGraph {
  std::vector<KgRelation> relations;
  // Every edge once, grouped by relation in relation order, each group
  // sorted by (src, dst); no duplicates within a relation.
  std::vector<KgEdge> edges;
  // Held-out edges moved to train because an endpoint had no train edge.
  uint64_t moved_to_train = 0;
};

// Builds the whole graph in memory on `threads` threads (0: all cores).
// The result does not depend on `threads`.
absl::StatusOr<KgGraph> BuildKg(const KgOptions& options, int threads = 0);

// The files `GenerateKg` writes. `train` is GenOutputOptions::path.
struct KgOutputPaths {
  // Held-out edges; required when the matching fraction is > 0 (an empty
  // file is written when it is 0 and a path is given). Default: "".
  std::string valid;
  std::string test;
  // One "name\tkind\tpartner\n" line per relation, in relation order.
  // Optional. Default: "".
  std::string relations;
};

struct KgStats {
  uint64_t nodes = 0;
  uint64_t types = 0;
  uint64_t train_edges = 0;
  uint64_t valid_edges = 0;
  uint64_t test_edges = 0;
  uint64_t moved_to_train = 0;
  std::map<std::string, uint64_t> relations_by_kind;  // kind name -> count
  std::map<std::string, uint64_t> edges_by_kind;      // all splits
  uint64_t bytes_written = 0;                         // all edge files
  double seconds = 0;
};

// Validates, builds the graph and writes "src\trel\tdst\n" lines: train
// edges to `output.path`, held-out ones to paths.valid / paths.test, and the
// relations file. All files go to temporaries that are renamed only after
// every file is complete; on failure no path changes (except if a later
// rename fails after an earlier one succeeded). ".gz" names are compressed.
// Paths must differ. Fills `*stats` if non-null.
absl::Status GenerateKg(const KgOptions& options,
                        const GenOutputOptions& output,
                        const KgOutputPaths& paths, KgStats* stats = nullptr);

}  // namespace ember::tools::gen

#endif  // EMBER_TOOLS_GEN_KG_GENERATOR_H_
