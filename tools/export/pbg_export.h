// `ember export --format h5`: the trained embeddings in PyTorch-BigGraph's
// checkpoint layout, so that code written for PBG's output (its loader, its
// downstream-task examples) reads ember's unchanged.
//
// PBG's layout, as its sources write and read it
// (torchbiggraph/checkpoint_storage.py: FileCheckpointStorage;
// torchbiggraph/graph_storages.py: FileEntityStorage;
// docs/source/input_output.rst), one set of files per type and partition:
//   embeddings_<type>_<part>.v<N>.h5  HDF5 with the root attribute
//       "format_version" = 1 (a 64-bit integer, as h5py stores a Python int;
//       PBG's loader refuses any other) and the dataset "embeddings",
//       float32, shape (count, dim), row i = offset i of the partition.
//   entity_names_<type>_<part>.json   the names in row order, a JSON list
//       (PBG: json.dump(names, f, indent=4); written here the same way,
//       non-ASCII escaped as \uXXXX).
//   entity_count_<type>_<part>.txt    the count, "<count>\n".
//   checkpoint_version.txt            "<N>\n": the version PBG's
//       CheckpointManager opens.
// <part> is the partition's index within its type (0-based: a type's
// partitions are consecutive in ember); <N> is ember's checkpoint version.
// An untyped graph is one type named "all" (kPbgUntypedEntity), the name
// PBG's own examples give the one entity type of an untyped graph (the
// fb15k configs; its docs read embeddings_all_0.v50.h5).
//
//   model.v<N>.h5                     the relation parameters, as PBG's
//       FileCheckpointStorage.save_model writes them: format_version and
//       the group "model" with one float32 dataset per parameter, named
//       relations/<idx>/operator/<side>/<param> (PBG's public names, e.g.
//       relations/0/operator/rhs/real) with the string attribute
//       state_dict_key = <side>_operators.<idx>.<param>; no optimizer state.
//   config.json                       PBG's ConfigSchema as json.dumps(
//       config.to_dict(), indent=4) writes it: entities, relations,
//       dimension, comparator, loss_fn, operator and the rest at PBG's
//       defaults; entity_path and checkpoint_path are the export directory.
//   dynamic_rel_count.txt, dynamic_rel_names.json  the relation names in
//       id order (PBG's relation-type storage, read by export_to_tsv).
// PBG scores an edge c(lhs, rhs_op_r(rhs)); ember scores
// cmp(op_r(e_s), e_d). When every relation joins the same two types (always
// for an untyped graph) the export is a dynamic-relations model (one config
// relation "all_edges", a row per relation in each parameter): PBG's lhs
// operators, which it scores as c(lhs_op_r(lhs), rhs), are ember's w_r
// exactly, and its rhs operators are the adjoint of w_r where one exists
// (op none; diagonal and complex_diagonal with dot; translation with l2)
// or w_{r_inv} of a reciprocal model. Otherwise each relation is its own
// config relation with only rhs operators, written where the adjoint
// exists. Where no exact form exists the rhs operators are left out (PBG
// then keeps its identity initial values): meta.json's "pbg_model" says
// which ("rhs_operators": "exact" or "omitted"). The optimizer state (PBG's
// is a torch.save blob, optional to its loader) is not written. The
// relation parameters, operator and comparator are also in the directory's
// meta.json (MetaJson's fields, with "layout": "pbg" and every file of each
// type).
//
// Memory: one partition's rows and a buffer of names at a time.
// Atomicity: everything is written into "<out>.staging-<pid>" beside out,
// each file fsynced, and the directory renamed to out last; a failure
// removes the staging directory and leaves out as it was. out must be new
// or an empty directory; with `overwrite`, an h5 export that ember made
// (its meta.json says so and it holds nothing else) is replaced whole.
#ifndef EMBER_TOOLS_EXPORT_PBG_EXPORT_H_
#define EMBER_TOOLS_EXPORT_PBG_EXPORT_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/graph.h"
#include "tools/export/exporter.h"
#include "train/model/checkpoint.h"

namespace ember::tools {

// The entity name of an untyped graph's nodes.
inline constexpr char kPbgUntypedEntity[] = "all";

// Whether this build has HDF5 (libhdf5-dev at configure time).
bool PbgExportBuilt();
// OK when built; else Unimplemented saying what the build lacks.
absl::Status PbgExportAvailable();

// The entity name of type `type` in file names: its name, or
// kPbgUntypedEntity for an untyped graph.
std::string PbgEntityName(const Manifest& manifest, uint32_t type);

// PBG's file names (relative to the export directory).
std::string PbgEmbeddingsFile(const std::string& entity, uint32_t part, uint64_t version);
std::string PbgNamesFile(const std::string& entity, uint32_t part);
std::string PbgCountFile(const std::string& entity, uint32_t part);

// Writes the export described above for `model` (the graph's current
// checkpoint): the type options.type, or every type. Unimplemented when
// !PbgExportBuilt(); AlreadyExists when out is a non-empty directory and
// !options.overwrite; FailedPrecondition when out is a file, or (with
// overwrite) a directory that is not ember's h5 export, naming what it
// holds; InvalidArgument for a type name that cannot be part of a file name
// or a node name that is not UTF-8 (JSON cannot hold it).
// REQUIRES: options.Validate() is OK and options.format == kH5.
absl::StatusOr<ExportStats> ExportPbgCheckpoint(const Graph& graph, const StoredModel& model,
                                                const ExportOptions& options);

}  // namespace ember::tools

#endif  // EMBER_TOOLS_EXPORT_PBG_EXPORT_H_
