// A graph's schema, as `ember import --schema` reads it: the node types and,
// for each relation, the types of its source and destination (PBG's entity
// types and each relation's lhs and rhs). Pure: parsing and lookup only.
//
// A schema file has one relation a line,
//   relation<TAB>source type<TAB>destination type
// with '#' comments and blank lines skipped; a relation name may hold
// spaces, '-' and ':'. A line of two fields, `source type<TAB>destination
// type`, gives the types of an edge list without a relation column (its
// one relation, "default"). The inline form, for short schemas, is a comma
// list of REL:SRC:DST entries (split at the last two ':', so relation names
// keep theirs) or one SRC:DST entry.
#ifndef EMBER_PARTITION_SCHEMA_H_
#define EMBER_PARTITION_SCHEMA_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "storage/manifest.h"

namespace ember {

// The relation name of edge lists without a relation column.
inline constexpr std::string_view kDefaultRelation = "default";

struct GraphSchema {
  // Type names, in the order of their first mention (the order of their
  // partitions in the graph).
  std::vector<std::string> types;
  struct Relation {
    std::string name;
    RelationTypes types;
  };
  std::vector<Relation> relations;  // as declared

  // The entry of `relation` (kDefaultRelation also matches ""), or nullptr.
  const Relation* Find(std::string_view relation) const;
};

// Reads `arg` as a schema file when a file of that name exists, else as the
// inline form. InvalidArgument naming the file and line (or the entry) for
// a line of the wrong shape, an empty name, or a relation declared twice
// with other types; NotFound for a file that cannot be read.
absl::StatusOr<GraphSchema> ParseSchema(const std::string& arg);

// The schema a typed graph's manifest records (its types and relation
// types); empty types for an untyped graph.
GraphSchema SchemaOf(const Manifest& m);

}  // namespace ember

#endif  // EMBER_PARTITION_SCHEMA_H_
