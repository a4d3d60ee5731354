// The device step's kernel bodies (train/device/kernel_bodies.h), run through
// the host launcher, against the CPU trainer's chunk scorer: for every model
// the device trains, with and without endpoint negatives, on one partition
// and on two, a batch whose last chunk is padded must give the scorer's loss,
// the scorer's row gradients summed per distinct row, its relation
// gradients, and then one row-wise Adagrad step per distinct row.
#include <cmath>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/train/device_step_util.h"
#include "train/model/adagrad.h"
#include "train/model/chunk_scorer.h"
#include "train/device/device_batch_plan.h"
#include "train/device/device_ops.h"
#include "train/model/featurized.h"
#include "train/model/model_options.h"

namespace ember {
namespace {

constexpr int kDim = 8, kChunk = 5, kNegs = 3, kRelations = 3;

using device_test::DeviceCases;
using device_test::MakeStepBatch;
using device_test::Rows;
using device_test::RunStepOn;
using device_test::StepBatch;
using device_test::StepCase;
using device_test::StepResult;

// l2 scores of two copies of one row (a repeated source among the
// endpoints) come from the GEMM expansion on both sides, where rounding in
// the norms is amplified by 1 / distance: hence 1e-3, not 1e-5.
void ExpectNear(const std::vector<float>& want, const std::vector<float>& got,
                const std::string& what) {
  device_test::ExpectAllNear(want, got, 1e-3f, what);
}

// What the CPU's chunk scorer makes of batch b, chunk by chunk, with its
// gradients summed per distinct row and relation slot.
struct Expected {
  double loss = 0;
  std::vector<float> dx, drel;
};
Expected ScoreWithChunkScorer(const StepCase& c, const StepBatch& b) {
  const DeviceBatchPlan& plan = b.plan;
  const device::StepShape& sh = b.sh;
  Expected want;
  want.dx.assign(plan.u_node.size() * kDim, 0.0f);
  want.drel.assign(b.slot_rel.size(), 0.0f);
  ChunkWorkspace ws(kDim, kChunk, kNegs);
  const int n = sh.candidates();
  const int64_t edge_slots = int64_t{plan.chunks} * kChunk;
  for (int ch = 0; ch < plan.chunks; ++ch) {
    const int valid = sh.valid_rows(ch);
    const int32_t* q0 = &plan.q_row[ch * kChunk];
    const int32_t* q1 = &plan.q_row[edge_slots + ch * kChunk];
    const int32_t* k0 = &plan.k_row[int64_t{ch} * n];
    const int32_t* k1 = &plan.k_row[(int64_t{plan.chunks} + ch) * n];
    auto rows_of = [&](const Rows& p, const int32_t* idx, int count) {
      std::vector<float> out;
      for (int i = 0; i < count; ++i) {
        const float* r = p.Row(plan.u_node[idx[i]]);
        out.insert(out.end(), r, r + kDim);
      }
      return out;
    };
    const std::vector<float> lhs = rows_of(b.src, q0, valid), rhs = rows_of(b.dst_rows(), q1, valid);
    const std::vector<float> src_negs = rows_of(b.src, k1 + kChunk, kNegs);
    const std::vector<float> dst_negs = rows_of(b.dst_rows(), k0 + kChunk, kNegs);
    std::vector<uint32_t> lhs_nodes, rhs_nodes, slots;
    for (int i = 0; i < valid; ++i) {
      lhs_nodes.push_back(b.edges[ch * kChunk + i].src);
      rhs_nodes.push_back(b.edges[ch * kChunk + i].dst);
      slots.push_back(plan.q_slot[ch * kChunk + i]);
    }
    ChunkInput ci;
    ci.lhs = lhs.data();
    ci.rhs = rhs.data();
    ci.src_negs = src_negs.data();
    ci.dst_negs = dst_negs.data();
    ci.chunk = valid;
    ci.num_src_negs = ci.num_dst_negs = kNegs;
    ci.rel_slot = slots.data();
    ci.endpoint_negs = c.endpoints;
    ci.lhs_nodes = lhs_nodes.data();
    ci.rhs_nodes = rhs_nodes.data();
    ci.same_node_table = !c.two_partitions;
    std::vector<float> g_lhs(lhs.size()), g_rhs(rhs.size()), g_src(src_negs.size()),
        g_dst(dst_negs.size()), g_rel(std::max<size_t>(b.slot_rel.size(), 1));
    ChunkGrads g{g_lhs.data(), g_rhs.data(), g_src.data(), g_dst.data(),
                 b.rel_size > 0 ? g_rel.data() : nullptr};
    want.loss += ChunkForwardBackward(c.model, b.rel_size > 0 ? b.slot_rel.data() : nullptr, ci,
                                      g, &ws);
    auto add = [&](const std::vector<float>& grads, const int32_t* idx, int count) {
      for (int i = 0; i < count; ++i) {
        for (int k = 0; k < kDim; ++k) want.dx[size_t(idx[i]) * kDim + k] += grads[i * kDim + k];
      }
    };
    add(g_lhs, q0, valid);
    add(g_rhs, q1, valid);
    add(g_src, k1 + kChunk, kNegs);
    add(g_dst, k0 + kChunk, kNegs);
    for (size_t i = 0; i < want.drel.size(); ++i) want.drel[i] += g_rel[i];
  }
  return want;
}

void ExpectStepsMatchChunkScorer(const std::vector<StepCase>& cases) {
  std::unique_ptr<DeviceOps> ops = MakeHostDeviceOps(2);
  constexpr uint64_t kFrozen = 2;  // rows 0 and 1 of each table stay put
  constexpr float kLr = 0.1f;
  for (const StepCase& c : cases) {
    SCOPED_TRACE(c.Name());
    // 3 chunks, the last padded.
    const StepBatch b = MakeStepBatch(c, kChunk, kNegs, 3 * kChunk - 2, 9, 7, kRelations, 11);
    ASSERT_EQ(b.plan.chunks, 3);
    ASSERT_EQ(b.plan.last_valid, kChunk - 2);
    const Expected want = ScoreWithChunkScorer(c, b);
    const StepResult got = RunStepOn(*ops, b.plan, b.sh, b.slot_rel, b.src, b.dst_or_null(),
                                     kFrozen, kLr);
    ASSERT_EQ(got.error, "");
    EXPECT_NEAR(got.loss, want.loss, 1e-3 * (1 + std::fabs(want.loss)));
    ExpectNear(want.dx, got.dx, "row gradient");
    ExpectNear(want.drel, got.drel, "relation gradient");

    // One Adagrad step per distinct row with its summed gradient.
    Rows want_src = b.src, want_dst = b.dst;
    for (size_t u = 0; u < b.plan.u_node.size(); ++u) {
      Rows& p = b.plan.u_table[u] == 0 ? want_src : want_dst;
      const uint32_t node = b.plan.u_node[u];
      if (node < kFrozen) continue;
      AdagradRowUpdate(p.emb.data() + size_t{node} * kDim, &p.state[node], &want.dx[u * kDim],
                       kDim, kLr);
    }
    ExpectNear(want_src.emb, got.src.emb, "src rows after the step");
    ExpectNear(want_src.state, got.src.state, "src state after the step");
    if (c.two_partitions) ExpectNear(want_dst.emb, got.dst.emb, "dst rows after the step");
  }
}

TEST(DeviceStepTest, MatchesChunkScorerForEveryDeviceModel) {
  const std::vector<StepCase> cases = DeviceCases(kDim);
  ASSERT_EQ(cases.size(), 18u * 4);  // the 18 mixed-form models
  ExpectStepsMatchChunkScorer(cases);
}

// Reciprocal models (side 1 queries op_{r⁻¹}(R_i) with the inverse's own
// parameters, for every operator and comparator) and N3 (its loss in the
// rows' losses, its gradients in dX and in both halves of the relation
// records): the step as the chunk scorer computes it.
TEST(DeviceStepTest, ReciprocalAndN3MatchChunkScorer) {
  const std::vector<StepCase> cases = device_test::ReciprocalAndN3Cases(kDim);
  // 27 reciprocal models with and without N3, 18 mixed-form ones with it.
  ASSERT_EQ(cases.size(), 27u * 2 + 18);
  ExpectStepsMatchChunkScorer(cases);
}

// Every node's row as a featurized model composes it (featurized.h).
Rows Composed(FeaturizedMode mode, const Rows& p, const Rows& features) {
  Rows out = p;
  out.emb.assign(p.rows * kDim, 0.0f);
  for (uint32_t node = 0; node < p.rows; ++node) {
    const uint32_t one[] = {node};
    ComposeEmbeddings(mode, kDim, one, p.feature_row_start.data(), p.feature_entries.data(),
                      features.emb.data(),
                      mode == FeaturizedMode::kIdPlusFeatures ? p.Row(node) : nullptr,
                      out.emb.data() + size_t{node} * kDim);
  }
  return out;
}

// Featurized models: the step composes its distinct rows from the feature
// table, scores them as the chunk scorer scores the composed rows, and
// gives each distinct feature one Adagrad step with its rows' gradients
// weighted by their feature weights (and, with id rows, each id row one).
TEST(DeviceStepTest, FeaturizedStepsMatchComposedRowsAndFeatureUpdates) {
  std::unique_ptr<DeviceOps> ops = MakeHostDeviceOps(2);
  constexpr float kLr = 0.1f;
  for (FeaturizedMode mode : {FeaturizedMode::kFeatures, FeaturizedMode::kIdPlusFeatures}) {
    for (const StepCase& id_case : DeviceCases(kDim)) {
      if (id_case.model.comparator != Comparator::kDot) continue;
      StepCase c = id_case;
      c.model.featurized = mode;
      SCOPED_TRACE(c.Name());
      const StepBatch b = MakeStepBatch(c, kChunk, kNegs, 3 * kChunk - 2, 9, 7, kRelations, 5);
      const StepResult got = RunStepOn(*ops, b.plan, b.sh, b.slot_rel, b.src, b.dst_or_null(),
                                       /*frozen=*/0, kLr, &b.features);
      ASSERT_EQ(got.error, "");

      // The chunk scorer on the composed rows.
      StepBatch composed = b;
      composed.src = Composed(mode, b.src, b.features);
      if (c.two_partitions) composed.dst = Composed(mode, b.dst, b.features);
      const Expected want = ScoreWithChunkScorer(id_case, composed);
      EXPECT_NEAR(got.loss, want.loss, 1e-3 * (1 + std::fabs(want.loss)));
      for (size_t u = 0; u < b.plan.u_node.size(); ++u) {
        const Rows& p = b.plan.u_table[u] == 0 ? composed.src : composed.dst;
        const float* row = p.Row(b.plan.u_node[u]);
        ExpectNear(std::vector<float>(row, row + kDim),
                   std::vector<float>(got.x.begin() + u * kDim, got.x.begin() + (u + 1) * kDim),
                   "composed row");
      }
      ExpectNear(want.dx, got.dx, "row gradient");

      // Feature rows: summed weighted gradients, one step each.
      std::vector<float> dfeat(b.plan.f_id.size() * kDim, 0.0f);
      for (size_t u = 0; u < b.plan.u_node.size(); ++u) {
        for (int64_t e = b.plan.u_feat_start[u]; e < b.plan.u_feat_start[u + 1]; ++e) {
          for (int k = 0; k < kDim; ++k) {
            dfeat[b.plan.u_feat[e] * kDim + k] += b.plan.u_weight[e] * want.dx[u * kDim + k];
          }
        }
      }
      ASSERT_FALSE(dfeat.empty());
      Rows want_features = b.features;
      for (size_t f = 0; f < b.plan.f_id.size(); ++f) {
        const uint32_t row = b.plan.f_id[f];
        AdagradRowUpdate(want_features.emb.data() + size_t{row} * kDim, &want_features.state[row],
                         &dfeat[f * kDim], kDim, kLr);
      }
      ExpectNear(want_features.emb, got.features.emb, "feature rows after the step");
      ExpectNear(want_features.state, got.features.state, "feature state after the step");
      if (mode == FeaturizedMode::kFeatures) {
        EXPECT_TRUE(got.src.emb.empty());
        continue;
      }
      Rows want_src = b.src;  // id rows: as without features
      for (size_t u = 0; u < b.plan.u_node.size(); ++u) {
        if (b.plan.u_table[u] != 0) continue;
        AdagradRowUpdate(want_src.emb.data() + size_t{b.plan.u_node[u]} * kDim,
                         &want_src.state[b.plan.u_node[u]], &want.dx[u * kDim], kDim, kLr);
      }
      ExpectNear(want_src.emb, got.src.emb, "id rows after the step");
    }
  }
}

// Distinct rows: each (table, row) once, the two tables apart when the
// bucket's partitions differ; negatives drawn as the CPU trainer draws them.
TEST(DeviceStepTest, PlanNumbersEachRowOnceAndPadsTheLastChunk) {
  std::vector<Edge> edges = {{0, 0, 1}, {1, 1, 0}, {0, 0, 1}};
  DeviceBatchInput in;
  in.chunk = 2;
  in.negs = 1;
  in.endpoints = true;
  in.src_rows = in.dst_rows = 2;
  DeviceBatchPlanner planner;
  DeviceBatchPlan one = planner.Plan(edges, in);
  EXPECT_EQ(one.chunks, 2);
  EXPECT_EQ(one.last_valid, 1);
  EXPECT_EQ(one.u_node.size(), 2u);  // rows 0 and 1 of one table
  EXPECT_EQ(one.slot_relation, (std::vector<uint32_t>{0, 1}));
  EXPECT_EQ(one.q_slot, (std::vector<int32_t>{0, 1, 0, 0}));
  // Chunk 1 (its row 1 is padding): side 0's queries, candidates [R; Ud; L].
  const int n = 2 + 1 + 2;
  EXPECT_EQ(one.q_row[3], -1);
  EXPECT_EQ(one.k_row[n + 1], -1);
  EXPECT_EQ(one.k_row[n + 4], -1);
  EXPECT_EQ(one.k_row[n + 3], one.q_row[2]);  // the endpoint is the chunk's source
  in.same_partition = false;
  DeviceBatchPlan two = planner.Plan(edges, in);
  EXPECT_EQ(two.u_node.size(), 4u);  // rows 0 and 1 of each table
  for (int i = 0; i < 3; ++i) {  // queries: sources from table 0, destinations from 1
    EXPECT_EQ(two.u_table[two.q_row[i]], 0);
    EXPECT_EQ(two.u_table[two.q_row[4 + i]], 1);
  }
}

}  // namespace
}  // namespace ember
