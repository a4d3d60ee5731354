#include "partition/schema.h"

#include <sys/stat.h>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "storage/base/status_macros.h"

namespace ember {
namespace {

std::string Trim(std::string_view s) {
  return std::string(absl::StripAsciiWhitespace(absl::string_view(s.data(), s.size())));
}

uint32_t TypeIndex(GraphSchema* schema, const std::string& name) {
  for (uint32_t t = 0; t < schema->types.size(); ++t) {
    if (schema->types[t] == name) return t;
  }
  schema->types.push_back(name);
  return static_cast<uint32_t>(schema->types.size() - 1);
}

// Adds one entry; `where` names it in errors ("file:3" or "entry 'x'").
absl::Status AddEntry(GraphSchema* schema, std::string relation, const std::string& src,
                      const std::string& dst, const std::string& where) {
  if (src.empty() || dst.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": a type name is empty"));
  }
  if (relation.empty()) relation = std::string(kDefaultRelation);
  GraphSchema::Relation r{relation, {TypeIndex(schema, src), TypeIndex(schema, dst)}};
  if (const GraphSchema::Relation* old = schema->Find(relation); old != nullptr) {
    if (old->types == r.types) return absl::OkStatus();
    return absl::InvalidArgumentError(
        absl::StrCat(where, ": relation '", relation, "' is declared again with other types (",
                     schema->types[old->types.src], " -> ", schema->types[old->types.dst],
                     " before, ", src, " -> ", dst, " here)"));
  }
  schema->relations.push_back(std::move(r));
  return absl::OkStatus();
}

absl::StatusOr<GraphSchema> ParseFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot read the schema"));
  GraphSchema schema;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::string trimmed = Trim(line);
    if (trimmed.empty() || trimmed[0] == '#') continue;
    const std::vector<std::string> fields = absl::StrSplit(line, '\t');
    const std::string where = absl::StrCat(path, ":", line_no);
    if (fields.size() == 3) {
      RETURN_IF_ERROR(AddEntry(&schema, Trim(fields[0]), Trim(fields[1]), Trim(fields[2]), where));
    } else if (fields.size() == 2) {
      RETURN_IF_ERROR(AddEntry(&schema, "", Trim(fields[0]), Trim(fields[1]), where));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": ", fields.size(), " tab-separated fields in '", trimmed,
                       "'; a schema line is relation<TAB>source type<TAB>destination type"));
    }
  }
  if (schema.relations.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": the schema declares no relation"));
  }
  return schema;
}

absl::StatusOr<GraphSchema> ParseInline(const std::string& text) {
  GraphSchema schema;
  for (absl::string_view entry : absl::StrSplit(text, ',', absl::SkipWhitespace())) {
    const std::string e = Trim(std::string_view(entry.data(), entry.size()));
    const size_t last = e.rfind(':');
    const size_t middle = last == std::string::npos ? std::string::npos : e.rfind(':', last - 1);
    const std::string where = absl::StrCat("--schema entry '", e, "'");
    if (last == std::string::npos || last == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where,
                       ": expected RELATION:SOURCE_TYPE:DESTINATION_TYPE or SOURCE_TYPE:"
                       "DESTINATION_TYPE (or a schema file; none of this name exists)"));
    }
    if (middle == std::string::npos) {
      RETURN_IF_ERROR(
          AddEntry(&schema, "", Trim(e.substr(0, last)), Trim(e.substr(last + 1)), where));
    } else {
      RETURN_IF_ERROR(AddEntry(&schema, Trim(e.substr(0, middle)),
                               Trim(e.substr(middle + 1, last - middle - 1)),
                               Trim(e.substr(last + 1)), where));
    }
  }
  if (schema.relations.empty()) {
    return absl::InvalidArgumentError("--schema: no relation declared");
  }
  return schema;
}

}  // namespace

const GraphSchema::Relation* GraphSchema::Find(std::string_view relation) const {
  if (relation.empty()) relation = kDefaultRelation;
  for (const Relation& r : relations) {
    if (r.name == relation) return &r;
  }
  return nullptr;
}

absl::StatusOr<GraphSchema> ParseSchema(const std::string& arg) {
  struct stat st;
  if (::stat(arg.c_str(), &st) == 0) return ParseFile(arg);
  return ParseInline(arg);
}

GraphSchema SchemaOf(const Manifest& m) {
  GraphSchema schema;
  if (!m.typed()) return schema;
  for (const NodeType& t : m.node_types) schema.types.push_back(t.name);
  for (size_t r = 0; r < m.relations.size(); ++r) {
    schema.relations.push_back({m.relations[r], m.relation_types[r]});
  }
  return schema;
}

}  // namespace ember
