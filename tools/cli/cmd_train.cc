// ember train GRAPH [flags]
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "nlohmann/json.hpp"
#include "storage/base/progress.h"
#include "storage/base/status_macros.h"
#include "storage/manifest.h"
#include "tools/bench/hooks/killed_rank.h"
#include "tools/bench/hooks/slowed_trainer.h"
#include "tools/cli/cli.h"
#include "tools/cli/common_flags.h"
#include "tools/cli/eval_flags.h"
#include "tools/cli/train_flags.h"
#include "train/blas/blas_startup.h"
#include "train/distributed/launcher.h"
#include "train/model/train_state.h"
#include "train/train_loop.h"
#include "train/tune/auto_lr.h"
#include "train/tune/probe.h"
#ifdef EMBER_HAVE_MPI
#include "train/distributed/mpi/mpi_cluster.h"
#endif

// Shared with import (defined in cmd_import.cc): train spends it on the
// partition buffer, the edge windows in flight and storage buffers.

// Every flag's default is the default of the TrainOptions field it sets
// (TrainOptionsFromFlags), except --lr (auto: the command probes) and the
// flags shared with other commands (common_flags.h).
namespace {
const ember::TrainOptions kTrainDefaults;
}  // namespace

ABSL_FLAG(int, epochs, kTrainDefaults.epochs,
          "train: total epochs (a resumed run trains the rest).");
ABSL_FLAG(std::string, lr, "auto",
          "train: Adagrad learning rate, or auto: probe 0.1 and 0.01, then 0.03 and 0.3, as "
          "many as 10% of the run affords (0.1 and 0.3 on graphs of several relations), each "
          "one epoch on a sample of the train edges, ranking the same validation edges, and keep "
          "0.1 unless a probe beats it edge by edge by 3 standard errors (then the smallest step "
          "that does); a run too short for two probes, or without validation edges, keeps 0.1; "
          "a resumed run keeps its lr.");
ABSL_FLAG(double, relation_lr_scale,
          ember::tools::FloatFlagDefault(kTrainDefaults.optimizer.relation_lr_scale),
          "train: relation parameters step at this multiple of --lr.");
ABSL_FLAG(int, batch_size, kTrainDefaults.pipeline.batch_size, "train: positive edges per batch.");
ABSL_FLAG(int, chunk_size, kTrainDefaults.pipeline.chunk_size,
          "train: edges per negative-sharing chunk.");
ABSL_FLAG(int, num_uniform_negs, kTrainDefaults.pipeline.num_uniform_negs,
          "train: uniform negatives per chunk and side.");
ABSL_FLAG(ember::RelationBatching, relation_batching, kTrainDefaults.pipeline.relation_batching,
          "train: mixed (chunks of any relations, scored through the operator's adjoint) or "
          "grouped (one relation per chunk, as PBG); models without an adjoint train grouped.");
ABSL_FLAG(ember::EndpointNegatives, endpoint_negatives, kTrainDefaults.pipeline.endpoint_negatives,
          "train: on, off or auto (on for graphs of several relations): also score each "
          "chunk's sources as candidate destinations and its destinations as candidate sources "
          "(every h r t meets h r h and t r t).");
ABSL_FLAG(ember::Operator, operator, kTrainDefaults.model.op,
          "train: relation operator: none, translation, diagonal, complex_diagonal.");
ABSL_FLAG(ember::Comparator, comparator, kTrainDefaults.model.comparator, "train: dot, cos or l2.");
ABSL_FLAG(ember::Loss, loss, kTrainDefaults.model.loss, "train: ranking, logistic or softmax.");
ABSL_FLAG(bool, reciprocal, kTrainDefaults.model.reciprocal,
          "train: reciprocal relations: each relation gets an inverse with its own parameters, "
          "and an edge h r t trains h r t predicting t and t r_inv h predicting h (eval ranks a "
          "head query ? r t as t r_inv ?); part of the model (needs an --operator).");
ABSL_FLAG(ember::Regularizer, regularizer, kTrainDefaults.model.regularizer,
          "train: none, or n3: --reg-weight times the sum of |x|^3 over the rows and relation "
          "parameters of each trained edge (complex moduli under complex_diagonal), added to "
          "the loss.");
ABSL_FLAG(double, reg_weight, ember::tools::FloatFlagDefault(kTrainDefaults.model.reg_weight),
          "train: weight of --regularizer n3, per edge and side.");
ABSL_FLAG(ember::Precision, precision, kTrainDefaults.model.precision,
          "train: fp32, or bf16: the chunk step's products on operands rounded to bfloat16 and "
          "summed in fp32 (rows, gradients and Adagrad stay fp32), about 1.4x faster steps on "
          "CPUs with AVX512-BF16 (needs one).");
ABSL_FLAG(double, margin, ember::tools::FloatFlagDefault(kTrainDefaults.model.margin),
          "train: margin of the ranking loss.");
ABSL_FLAG(double, init_scale, ember::tools::FloatFlagDefault(kTrainDefaults.optimizer.init_scale),
          "train: std-dev of the initial embeddings.");
ABSL_FLAG(int, trainers, kTrainDefaults.devices.trainers,
          "train: CPU trainers working at once on disjoint buckets, sharing --threads "
          "(shorthand for --devices cpu,cpu,...).");
ABSL_FLAG(std::string, devices, kTrainDefaults.devices.list,
          "train: trainers by device, comma-separated: cpu, cpu:THREADS, cuda:N "
          "(default: --trainers CPU trainers).");
ABSL_FLAG(int, buffer_partitions, static_cast<int>(kTrainDefaults.schedule.buffer_partitions),
          "train: partitions held in memory (0: as many as --memory-budget allows).");
ABSL_FLAG(uint64_t, window_edges, kTrainDefaults.pipeline.window_edges,
          "train: edges per shuffled window of a bucket (0: sized from --memory-budget).");
ABSL_FLAG(ember::BucketOrderKind, bucket_order, kTrainDefaults.schedule.bucket_order,
          "train: inside-out (PBG), beta (Marius), sequential or random.");
ABSL_FLAG(int, checkpoint_every, static_cast<int>(kTrainDefaults.schedule.checkpoint_every),
          "train: also checkpoint every N buckets (0: at epoch ends only).");
ABSL_FLAG(bool, checkpoint_beside, kTrainDefaults.schedule.checkpoint_beside,
          "train: write an epoch's checkpoint while the next epoch trains, where every partition "
          "is in memory (false: before the next epoch starts).");
ABSL_FLAG(bool, from_scratch, kTrainDefaults.from_scratch, "train: ignore an existing checkpoint.");
ABSL_FLAG(bool, deterministic, kTrainDefaults.pipeline.deterministic,
          "train: one batch in flight; with --threads 1 results are bit-identical.");
ABSL_FLAG(bool, only_new_edges, kTrainDefaults.only_new_edges,
          "train: after `ember import --append`, train only the new edges and "
          "update only the new nodes (old embeddings stay frozen).");
ABSL_FLAG(ember::FeaturizedMode, featurized, kTrainDefaults.model.featurized,
          "train: off (id embeddings), features (weighted mean of the node's feature "
          "embeddings; needs import --node-features) or id+features (both, summed).");
ABSL_FLAG(ember::BatchingKind, batching, kTrainDefaults.pipeline.batching,
          "train: fixed (--batch-size edges per batch) or variance-aware (batches of equal "
          "work, i.e. feature non-zeros, dealt to whichever trainer is free).");
ABSL_FLAG(ember::EdgeWeightMode, weights, kTrainDefaults.edge_weights,
          "train: a weighted graph's edge weights (import --weight-column): loss (scale each "
          "edge's loss by its weight), sample (draw edges at a rate proportional to their "
          "weight) or ignore. Unweighted graphs train the same under each. A resumed run keeps "
          "the checkpoint's unless given.");
ABSL_FLAG(bool, eval_valid, kTrainDefaults.validation.enabled,
          "train: after each epoch, filtered validation MRR with its 95% interval, by "
          "default of a sample of --eval-max-edges valid edges ranked against all nodes "
          "(--eval-negatives).");
ABSL_FLAG(double, rank_timeout, kTrainDefaults.rank_timeout_seconds,
          "train: under mpirun, the longest wait in seconds for a partition from another "
          "rank, and the longest a rank may go without progress (a round finished, a "
          "partition of a checkpoint written or loaded); past it the whole job stops with an "
          "error.");
ABSL_FLAG(bool, rank_copies, kTrainDefaults.rank_copies,
          "train: under mpirun, every rank trains its own copy of the graph (one per machine; "
          "on one host a GRAPH path naming the rank as %r, which sets this) and checkpoints "
          "the partitions it holds into it, rank 0 committing once every share is durable; "
          "`ember gather` brings the rows into one copy for eval, export and neighbors. "
          "false: ranks sharing one graph path each write their share beside it for rank 0 "
          "to take in; on separate copies rank 0 writes every checkpoint into its own.");
ABSL_FLAG(std::string, bench_slow_trainer, "",
          "train bench: benchmark only: INDEX:FACTOR makes trainer INDEX (from 0) take FACTOR "
          ">= 1 times as long per batch, by waiting, to compare batching across trainers of "
          "unequal speed on equal CPUs (tools/bench/unequal.sh). Empty: no trainer slowed.");

ABSL_FLAG(std::string, test_kill_at, "",
          "train test: tests only: RANK:STEP[:NTH] kills rank RANK with SIGKILL right after "
          "STEP (written, rank0-committed, committed) of its NTH (default 1) checkpoint "
          "written by shares (into own copies, or beside one shared path, which has no "
          "committed step), to test resuming from a kill at each step under mpirun "
          "(tests/tools/mpi_train_test.sh). Empty: none.");

namespace ember::tools {

absl::StatusOr<TrainOptions> TrainOptionsFromFlags() {
  TrainOptions o;
  o.model.op = absl::GetFlag(FLAGS_operator);
  o.model.comparator = absl::GetFlag(FLAGS_comparator);
  o.model.loss = absl::GetFlag(FLAGS_loss);
  o.model.margin = absl::GetFlag(FLAGS_margin);
  o.model.dim = absl::GetFlag(FLAGS_dim);
  o.model.featurized = absl::GetFlag(FLAGS_featurized);
  o.model.precision = absl::GetFlag(FLAGS_precision);
  o.model.reciprocal = absl::GetFlag(FLAGS_reciprocal);
  o.model.regularizer = absl::GetFlag(FLAGS_regularizer);
  o.model.reg_weight = static_cast<float>(absl::GetFlag(FLAGS_reg_weight));
  o.pipeline.batching = absl::GetFlag(FLAGS_batching);
  o.pipeline.relation_batching = absl::GetFlag(FLAGS_relation_batching);
  o.pipeline.endpoint_negatives = absl::GetFlag(FLAGS_endpoint_negatives);
  o.edge_weights = absl::GetFlag(FLAGS_weights);
  o.epochs = absl::GetFlag(FLAGS_epochs);
  if (o.epochs < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--epochs ", o.epochs,
        ": give the total number of epochs to reach, at least 1 (a "
        "resumed run trains the ones missing; `ember inspect GRAPH` shows how many are done)"));
  }
  const std::string lr = absl::GetFlag(FLAGS_lr);
  o.optimizer.lr_auto = lr == "auto";
  if (!o.optimizer.lr_auto && (!absl::SimpleAtof(lr, &o.optimizer.lr) || !(o.optimizer.lr > 0))) {
    return absl::InvalidArgumentError(
        absl::StrCat("--lr takes auto or a positive number, got \"", lr, "\""));
  }
  o.optimizer.relation_lr_scale = static_cast<float>(absl::GetFlag(FLAGS_relation_lr_scale));
  o.pipeline.batch_size = absl::GetFlag(FLAGS_batch_size);
  o.pipeline.chunk_size = absl::GetFlag(FLAGS_chunk_size);
  o.pipeline.num_uniform_negs = absl::GetFlag(FLAGS_num_uniform_negs);
  o.optimizer.init_scale = absl::GetFlag(FLAGS_init_scale);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.devices.threads = ThreadCount();
  o.devices.trainers = absl::GetFlag(FLAGS_trainers);
  o.devices.list = absl::GetFlag(FLAGS_devices);
  ASSIGN_OR_RETURN(o.schedule.memory_budget, MemoryBudget());
  o.pipeline.window_edges = absl::GetFlag(FLAGS_window_edges);
  if (absl::GetFlag(FLAGS_buffer_partitions) < 0) {
    return absl::InvalidArgumentError("--buffer-partitions must be >= 0");
  }
  o.schedule.buffer_partitions = absl::GetFlag(FLAGS_buffer_partitions);
  o.schedule.bucket_order = absl::GetFlag(FLAGS_bucket_order);
  if (absl::GetFlag(FLAGS_checkpoint_every) < 0) {
    return absl::InvalidArgumentError("--checkpoint-every must be >= 0");
  }
  o.schedule.checkpoint_every = absl::GetFlag(FLAGS_checkpoint_every);
  o.schedule.checkpoint_beside = absl::GetFlag(FLAGS_checkpoint_beside);
  o.from_scratch = absl::GetFlag(FLAGS_from_scratch);
  o.pipeline.deterministic = absl::GetFlag(FLAGS_deterministic);
  o.validation.enabled = absl::GetFlag(FLAGS_eval_valid);
  o.validation.negatives = absl::GetFlag(FLAGS_eval_negatives).value;
  o.validation.max_edges = absl::GetFlag(FLAGS_eval_max_edges);
  o.only_new_edges = absl::GetFlag(FLAGS_only_new_edges);
  o.rank_timeout_seconds = absl::GetFlag(FLAGS_rank_timeout);
  o.rank_copies = absl::GetFlag(FLAGS_rank_copies);
  if (const std::string slow = absl::GetFlag(FLAGS_bench_slow_trainer); !slow.empty()) {
    ASSIGN_OR_RETURN(const TrainerSlowdown slowdown, ParseTrainerSlowdown(slow));
    ASSIGN_OR_RETURN(o.bench.wrap_trainer, SlowTrainerWrap(slowdown));
  }
  if (const std::string kill = absl::GetFlag(FLAGS_test_kill_at); !kill.empty()) {
    ASSIGN_OR_RETURN(const RankKill at, ParseRankKill(kill));
    o.hooks.checkpoint_step = KillRankHook(at);
  }
  RETURN_IF_ERROR(o.Validate());
  return o;
}

absl::Status CheckRegWeightFlag(const TrainOptions& o) {
  if (FlagWasSet("reg_weight") && o.model.regularizer == Regularizer::kNone) {
    return absl::InvalidArgumentError(
        "--reg-weight weighs a regularizer, and none is chosen: add --regularizer n3");
  }
  return absl::OkStatus();
}

namespace {

// How --lr auto chose, one line per probe.
void PrintLrChoice(const AutoLrTrainSummary& s, int epochs) {
  if (!s.lr_choice.has_value()) return;
  const LrChoice& c = *s.lr_choice;
  if (c.unaffordable) {
    std::fprintf(stderr,
                 "lr auto: not probed: two probes would cost %.0f%% of this %d-epoch run (at "
                 "most %.0f%%); lr %g (pass --lr to choose, or train more epochs)\n",
                 100 * c.planned_share, epochs, 100 * kLrProbeShare, c.lr);
    return;
  }
  if (c.probes.empty()) {
    std::fprintf(stderr, "lr auto: %g, the one step for this model on this graph (not probed)\n",
                 c.lr);
    return;
  }
  std::fprintf(stderr,
               "lr auto: probes of 1 epoch on %.1f%% of the train edges, each ranking %llu "
               "validation edges, planned at %.1f%% of the run (%.1f s):\n",
               100 * c.edge_sample, static_cast<unsigned long long>(c.eval_edges),
               100 * c.planned_share, c.seconds);
  for (size_t k = 0; k < c.probes.size(); ++k) {
    const RankMetrics& f = c.probes[k].valid.filtered;
    std::string line =
        absl::StrFormat("  lr %-5g valid MRR %.4f ± %.4f", c.candidates[k], f.mrr, f.mrr_ci95);
    if (c.candidates[k] != c.baseline && k < c.vs_baseline.size()) {
      const PairedDifference& d = c.vs_baseline[k];
      absl::StrAppendFormat(&line, "  vs %g: %+.4f ± %.4f (%+.1f se)", c.baseline, d.mean, d.ci95,
                            d.z);
    }
    absl::StrAppendFormat(&line, "  (trained %.2f s, ranked %.2f s)", c.probes[k].train_seconds,
                          c.probes[k].valid.seconds);
    if (c.candidates[k] == c.lr) line += "  <- chosen";
    std::fprintf(stderr, "%s\n", line.c_str());
  }
  if (!c.significant) {
    std::fprintf(stderr, "  (no probe beat lr %g by %g standard errors: it stands)\n", c.baseline,
                 kLrPairedZ);
  }
  if (!c.unprobed.empty()) {
    std::fprintf(stderr, "  (not probed, beyond %.0f%% of this run: lr %s)\n", 100 * kLrProbeShare,
                 absl::StrJoin(c.unprobed, ", ").c_str());
  }
}

// Under an MPI launcher (mpirun -np N, N > 1): this rank's cluster, or why
// none can be had (a build without MPI refuses rather than train N
// uncoordinated copies of one graph).
absl::StatusOr<std::unique_ptr<Cluster>> ClusterFromLauncher() {
  const uint32_t launched = LauncherWorldSize();
  if (launched <= 1) return std::unique_ptr<Cluster>();
#ifdef EMBER_HAVE_MPI
  return StartMpiCluster();
#else
  return absl::FailedPreconditionError(absl::StrCat(
      "started by an MPI launcher as one of ", launched, " ranks, but this ember was built "
      "without MPI (install libopenmpi-dev and rebuild); run it as one process, without "
      "mpirun"));
#endif
}

// A rank's failure ends every rank of the job (the others would wait for
// it); one process just reports it.
int ReportTrainFailure(Cluster* cluster, const absl::Status& status) {
  if (cluster == nullptr) return ReportStatus("train", status);
  std::fprintf(stderr, "ember train: rank %u (%s): %s\n", cluster->rank(),
               cluster->where().c_str(), std::string(status.message()).c_str());
  std::fflush(stderr);
#ifdef EMBER_HAVE_MPI
  AbortMpiJob(1);
#endif
  return 1;
}

// Rank 0 prints every rank's host and trainers (unless `quiet`); every
// rank takes part.
absl::Status PrintRanks(Cluster& cluster, const TrainOptions& o, bool quiet) {
  const std::string trainers =
      o.devices.list.empty()
          ? absl::StrCat(o.devices.trainers, " cpu trainer(s), ", o.devices.threads, " thread(s)")
          : absl::StrCat("devices ", o.devices.list);
  ASSIGN_OR_RETURN(const std::vector<std::string> all,
                   cluster.AllGather(absl::StrCat(cluster.where(), ": ", trainers)));
  if (cluster.rank() != 0 || quiet) return absl::OkStatus();
  std::fprintf(stderr, "training across %zu ranks:\n", all.size());
  for (size_t r = 0; r < all.size(); ++r) std::fprintf(stderr, "  rank %zu on %s\n", r, all[r].c_str());
  return absl::OkStatus();
}

// --lr auto across ranks: the probes run in one process, so a fresh run
// takes the step they keep unless one beats it (LrCandidates' baseline);
// every rank computes the same.
float BaselineLr(Graph& graph, const TrainOptions& o) {
  return LrCandidates(static_cast<uint32_t>(graph.manifest().relations.size()), o.model).baseline;
}

// A checkpoint's model options, for the model flags this run left unset:
// `ember train G` alone resumes the model G holds. A flag set to another
// value is kept, and refused at restore as before. Returns the flags taken
// ("--dim 32", ...) where they differ from the flag's default; empty when
// there is no checkpoint to resume (or --from-scratch).
absl::StatusOr<std::vector<std::string>> AdoptCheckpointModel(const std::string& graph_dir,
                                                              TrainOptions* o) {
  std::vector<std::string> adopted;
  if (o->from_scratch) return adopted;
  const std::string manifest_path = absl::StrCat(graph_dir, "/MANIFEST.json");
  absl::StatusOr<Manifest> m = ReadManifest(manifest_path);
  // A graph that cannot be read is reported by the run itself.
  if (!m.ok() || m->training.checkpoint_version == 0) return adopted;
  ASSIGN_OR_RETURN(const TrainState state, ReadTrainState(*m, manifest_path));
  const ModelOptions& saved = state.model;
  const ModelOptions defaults;
  auto adopt = [&](const char* flag, auto saved_value, auto default_value, auto* field,
                   std::string text) {
    if (FlagWasSet(flag)) return;
    *field = saved_value;
    if (saved_value != default_value) {
      std::string dashed = flag;
      std::replace(dashed.begin(), dashed.end(), '_', '-');
      adopted.push_back(absl::StrCat("--", dashed, text.empty() ? "" : " ", text));
    }
  };
  adopt("dim", saved.dim, defaults.dim, &o->model.dim, absl::StrCat(saved.dim));
  adopt("operator", saved.op, defaults.op, &o->model.op, std::string(OperatorName(saved.op)));
  adopt("comparator", saved.comparator, defaults.comparator, &o->model.comparator,
        std::string(ComparatorName(saved.comparator)));
  adopt("loss", saved.loss, defaults.loss, &o->model.loss, std::string(LossName(saved.loss)));
  adopt("margin", saved.margin, defaults.margin, &o->model.margin, absl::StrCat(saved.margin));
  adopt("featurized", saved.featurized, defaults.featurized, &o->model.featurized,
        std::string(FeaturizedModeName(saved.featurized)));
  adopt("reciprocal", saved.reciprocal, defaults.reciprocal, &o->model.reciprocal,
        "");  // a bool flag adopted only when true: --reciprocal
  adopt("regularizer", saved.regularizer, defaults.regularizer, &o->model.regularizer,
        std::string(RegularizerName(saved.regularizer)));
  adopt("reg_weight", saved.reg_weight, defaults.reg_weight, &o->model.reg_weight,
        absl::StrCat(saved.reg_weight));
  // --weights shapes the loss as the model options do (stored with the
  // trainer's position; absent in checkpoints written before it was).
  if (!state.position.edge_weights.empty() && !FlagWasSet("weights")) {
    ASSIGN_OR_RETURN(o->edge_weights, EnumFromName<EdgeWeightMode>(state.position.edge_weights));
    if (o->edge_weights != EdgeWeightMode::kLoss) {
      adopted.push_back(absl::StrCat("--weights ", state.position.edge_weights));
    }
  }
  RETURN_IF_ERROR(o->Validate());
  return adopted;
}

}  // namespace

int TrainMain(const std::vector<std::string>& args) {
  if (args.size() != 1) {
    return ReportStatus("train", absl::InvalidArgumentError("usage: ember train GRAPH [flags]"));
  }
  auto options = TrainOptionsFromFlags();
  if (!options.ok()) return ReportStatus("train", options.status());
  absl::StatusOr<std::unique_ptr<Cluster>> started = ClusterFromLauncher();
  if (!started.ok()) return ReportStatus("train", started.status());
  std::unique_ptr<Cluster> cluster = std::move(*started);
  // This rank's copy where the path names the rank (TrainGraphOnCluster).
  const std::string mine = absl::StrReplaceAll(
      args[0], {{kRankInPath, absl::StrCat(cluster == nullptr ? 0 : cluster->rank())}});
  absl::StatusOr<std::vector<std::string>> adopted = AdoptCheckpointModel(mine, &*options);
  if (!adopted.ok()) return ReportTrainFailure(cluster.get(), adopted.status());
  if (absl::Status s = CheckRegWeightFlag(*options); !s.ok()) {
    return ReportTrainFailure(cluster.get(), s);
  }
  // Across ranks, rank 0 alone prints progress and results.
  const bool speaker = cluster == nullptr || cluster->rank() == 0;
  if (speaker) {
    PrintGemmStart(options->model.precision == Precision::kBf16
                       ? "; chunk products in bf16 (AVX512-BF16), fp32 sums"
                       : "");
  }
  if (speaker && !adopted->empty() && !absl::GetFlag(FLAGS_quiet)) {
    std::fprintf(stderr, "resuming with the checkpoint's %s\n",
                 absl::StrJoin(*adopted, " ").c_str());
  }
  if (cluster != nullptr) {
    if (absl::Status s = PrintRanks(*cluster, *options, absl::GetFlag(FLAGS_quiet)); !s.ok()) {
      return ReportTrainFailure(cluster.get(), s);
    }
  }
  ProgressPrinter progress = ProgressFromFlags();
  // Across ranks rank 0 alone prints progress. (A rank that stops making
  // progress ends the job through the library's watchdog,
  // train/distributed/rank_watchdog.h, after --rank-timeout.)
  if (speaker) {
    options->progress = [&](const TrainProgress& p) {
      progress.Update(absl::StrFormat("epoch %d/%d", p.epoch + 1, p.epochs), p.edges_done,
                      p.edges_total, "edges",
                      absl::StrFormat("%d/%d buckets done  loss %.4f", p.bucket, p.buckets,
                                      p.loss));
    };
  }
  absl::StatusOr<AutoLrTrainSummary> summary;
  if (cluster != nullptr) {
    absl::StatusOr<TrainSummary> s = TrainGraphOnCluster(
        args[0], *options, cluster.get(),
        [](Graph& g, const TrainOptions& o) -> absl::StatusOr<float> { return BaselineLr(g, o); });
    if (s.ok()) {
      AutoLrTrainSummary a;
      static_cast<TrainSummary&>(a) = std::move(*s);
      summary = std::move(a);
    } else {
      summary = s.status();
    }
  } else {
    summary = TrainGraphAutoLr(mine, *options);
  }
  progress.Finish();
  if (!summary.ok()) return ReportTrainFailure(cluster.get(), summary.status());
  if (!speaker) return 0;
  if (cluster != nullptr && options->optimizer.lr_auto && !summary->resumed) {
    std::fprintf(stderr, "lr auto: across ranks the probes do not run; lr %g (pass --lr to "
                 "choose)\n", summary->lr);
  }
  PrintLrChoice(*summary, options->epochs);
  if (cluster == nullptr && options->optimizer.lr_auto && !summary->lr_choice.has_value()) {
    std::fprintf(stderr, "lr auto: %s; lr %g\n",
                 summary->resumed ? "resumed, the checkpoint's" : "no validation edges to probe",
                 summary->lr);
  }
  if (summary->resumed) {
    std::fprintf(stderr, "resumed from checkpoint after %d epochs (round %llu)\n",
                 summary->start_epoch, (unsigned long long)summary->start_round);
  }
  if (summary->epochs.empty() && !summary->stopped) {
    std::fprintf(stderr,
                 "%s already trained %d epochs; nothing to do (raise --epochs or "
                 "pass --from-scratch)\n",
                 mine.c_str(), summary->start_epoch);
  }
  if (!absl::GetFlag(FLAGS_json) && !summary->epochs.empty() && summary->epochs[0].valid) {
    std::printf("validation after each epoch: %s\n",
                DescribeProtocol(*summary->epochs[0].valid).c_str());
  }
  for (const EpochStats& e : summary->epochs) {
    if (absl::GetFlag(FLAGS_json)) {
      // Each epoch line names the GEMM backend, kernel and precision.
      std::printf("%s\n", EpochJsonLine(e).c_str());
    } else {
      std::string line = absl::StrFormat(
          "epoch %d: loss %.4f, %s edges in %.2f s (%s edges/s), %llu partition loads", e.epoch,
          e.loss, HumanCount(e.edges), e.seconds, HumanCount(e.edges_per_second),
          (unsigned long long)e.partition_loads);
      if (e.valid) {
        absl::StrAppendFormat(&line, ", valid MRR %.4f ± %.4f", e.valid->filtered.mrr,
                              e.valid->filtered.mrr_ci95);
      }
      absl::StrAppendFormat(&line, "\n  %llu batches, time cv %.2f",
                            (unsigned long long)e.batches, e.batch_seconds_cv);
      if (e.batch_nnz_max_over_mean > 0) {
        absl::StrAppendFormat(&line, ", feature non-zeros cv %.2f (max/mean %.2f)",
                              e.batch_nnz_cv, e.batch_nnz_max_over_mean);
      }
      if (e.batches_per_trainer.size() > 1) {
        absl::StrAppendFormat(&line, ", trainers idle %.1f%%, batches by trainer %s",
                              100 * e.idle_share, absl::StrJoin(e.batches_per_trainer, "/"));
      }
      std::printf("%s\n", line.c_str());
      if (e.predicted.has_value() && e.predicted_doubled.has_value()) {
        std::printf("%s\n", DescribePrediction(*e.ranks_measure, *e.predicted,
                                                *e.predicted_doubled).c_str());
      }
    }
  }
  if (!absl::GetFlag(FLAGS_json) && summary->device_peak_bytes > 0) {
    std::printf("trained on %s; device memory peak %s\n",
                absl::StrJoin(summary->devices, ", ").c_str(),
                HumanBytes(summary->device_peak_bytes).c_str());
  }
  return 0;
}

}  // namespace ember::tools
