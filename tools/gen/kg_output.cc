// The file-writing half of `ember gen kg` (GenerateKg): the graph of
// BuildKg as train / valid / test triple files and a relations file, all
// committed together.
#include <algorithm>
#include <charconv>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "storage/base/status_macros.h"
#include "tools/gen/gen_output.h"
#include "tools/gen/kg_generator.h"

namespace ember::tools::gen {
namespace {

constexpr uint64_t kChunkEdges = uint64_t{1} << 16;

// Appends "src\trel\tdst\n" for each edge.
void AppendTriples(const std::vector<KgRelation>& rels,
                   std::span<const KgEdge> edges, std::string* text) {
  size_t longest_name = 0;
  for (const KgRelation& r : rels) {
    longest_name = std::max(longest_name, r.name.size());
  }
  const size_t max_line = 2 * 10 + longest_name + 3;  // ids are < 2^31
  const size_t old_size = text->size();
  text->resize(old_size + edges.size() * max_line);
  char* p = text->data() + old_size;
  char* const end = text->data() + text->size();
  for (const KgEdge& e : edges) {
    p = std::to_chars(p, end, e.src).ptr;
    *p++ = '\t';
    const std::string& name = rels[e.relation].name;
    p = std::copy(name.begin(), name.end(), p);
    *p++ = '\t';
    p = std::to_chars(p, end, e.dst).ptr;
    *p++ = '\n';
  }
  text->resize(static_cast<size_t>(p - text->data()));
}

absl::Status WriteTriples(const std::vector<KgRelation>& rels,
                          const std::vector<KgEdge>& edges,
                          const GenOutputOptions& options,
                          std::string_view label, GenOutputFile* file) {
  const uint64_t total = edges.size();
  const uint64_t chunks = (total + kChunkEdges - 1) / kChunkEdges;
  auto chunk_edges = [total](uint64_t i) {
    return std::min(kChunkEdges, total - i * kChunkEdges);
  };
  return WriteChunksInOrder(
      chunks, total,
      [&](uint64_t i, std::string* text) {
        AppendTriples(rels,
                      std::span<const KgEdge>(edges).subspan(i * kChunkEdges,
                                                             chunk_edges(i)),
                      text);
      },
      chunk_edges, options, label, "edges", file);
}

absl::Status WriteRelations(const std::vector<KgRelation>& rels,
                            GenOutputFile* file) {
  std::string text;
  for (const KgRelation& r : rels) {
    absl::StrAppend(&text, r.name, "\t", KgKindName(r.kind), "\t", r.partner,
                    "\n");
  }
  RETURN_IF_ERROR(file->Encode(&text));
  return file->Write(text);
}

absl::Status CheckPaths(const KgOptions& options,
                        const GenOutputOptions& output,
                        const KgOutputPaths& paths) {
  if (options.valid_fraction > 0 && paths.valid.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gen kg: --valid-out is required with --valid-fraction ",
                     options.valid_fraction, " > 0"));
  }
  if (options.test_fraction > 0 && paths.test.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("gen kg: --test-out is required with --test-fraction ",
                     options.test_fraction, " > 0"));
  }
  const std::pair<const char*, const std::string*> named[] = {
      {"--out", &output.path},
      {"--valid-out", &paths.valid},
      {"--test-out", &paths.test},
      {"--relations-out", &paths.relations}};
  for (size_t i = 0; i < std::size(named); ++i) {
    for (size_t j = i + 1; j < std::size(named); ++j) {
      if (!named[i].second->empty() && *named[i].second == *named[j].second) {
        return absl::InvalidArgumentError(
            absl::StrCat("gen kg: ", named[i].first, " and ", named[j].first,
                         " must differ, both are '", *named[i].second, "'"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status GenerateKg(const KgOptions& options,
                        const GenOutputOptions& output,
                        const KgOutputPaths& paths, KgStats* stats) {
  RETURN_IF_ERROR(options.Validate());
  RETURN_IF_ERROR(output.Validate());
  RETURN_IF_ERROR(CheckPaths(options, output, paths));
  const absl::Time start = absl::Now();

  // Every file is created before the work, so an existing output fails
  // fast; uncommitted temporaries vanish with their GenOutputFile.
  auto create = [&output](const std::string& path)
      -> absl::StatusOr<std::unique_ptr<GenOutputFile>> {
    if (path.empty()) return nullptr;
    return GenOutputFile::Create(path, output.overwrite, output.gzip_level);
  };
  std::unique_ptr<GenOutputFile> split_files[3];
  ASSIGN_OR_RETURN(split_files[0], create(output.path));
  ASSIGN_OR_RETURN(split_files[1], create(paths.valid));
  ASSIGN_OR_RETURN(split_files[2], create(paths.test));
  ASSIGN_OR_RETURN(std::unique_ptr<GenOutputFile> relations_file,
                   create(paths.relations));

  ASSIGN_OR_RETURN(KgGraph g, BuildKg(options, output.threads));
  std::vector<KgEdge> by_split[3];
  for (const KgEdge& e : g.edges) {
    by_split[static_cast<int>(e.split)].push_back(e);
  }
  const char* const labels[3] = {"gen kg train", "gen kg valid", "gen kg test"};
  GenOutputOptions quiet = output;
  quiet.progress = false;  // one meter, on the train file
  for (int s = 0; s < 3; ++s) {
    if (split_files[s] == nullptr) continue;
    RETURN_IF_ERROR(WriteTriples(g.relations, by_split[s],
                                 s == 0 ? output : quiet, labels[s],
                                 split_files[s].get()));
  }
  if (relations_file != nullptr) {
    RETURN_IF_ERROR(WriteRelations(g.relations, relations_file.get()));
  }
  uint64_t bytes = 0;
  for (auto& f : split_files) {
    if (f == nullptr) continue;
    RETURN_IF_ERROR(f->Commit());
    bytes += f->bytes_written();
  }
  if (relations_file != nullptr) RETURN_IF_ERROR(relations_file->Commit());

  if (stats != nullptr) {
    *stats = KgStats();
    stats->nodes = options.nodes;
    stats->types = options.types;
    stats->train_edges = by_split[0].size();
    stats->valid_edges = by_split[1].size();
    stats->test_edges = by_split[2].size();
    stats->moved_to_train = g.moved_to_train;
    std::vector<uint64_t> edges_of(g.relations.size(), 0);
    for (const KgEdge& e : g.edges) ++edges_of[e.relation];
    for (size_t i = 0; i < g.relations.size(); ++i) {
      const std::string kind(KgKindName(g.relations[i].kind));
      ++stats->relations_by_kind[kind];
      stats->edges_by_kind[kind] += edges_of[i];
    }
    stats->bytes_written = bytes;
    stats->seconds = absl::ToDoubleSeconds(absl::Now() - start);
  }
  return absl::OkStatus();
}

}  // namespace ember::tools::gen
