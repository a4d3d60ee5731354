// Test helpers for device steps: runs one step (train/device/step_sequence.h)
// through any DeviceOps, copying its inputs into the ops' memory and its
// outputs back, so that host and CUDA results compare directly.
#ifndef EMBER_TESTS_TRAIN_DEVICE_STEP_UTIL_H_
#define EMBER_TESTS_TRAIN_DEVICE_STEP_UTIL_H_

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/types.h"
#include "train/device/device_batch_plan.h"
#include "train/device/device_ops.h"
#include "train/model/model_options.h"

namespace ember::device_test {

// got[i] within tolerance · (1 + |want[i]|) of want[i], for every i; a
// failure counts the elements off and names the first and the worst.
inline void ExpectAllNear(const std::vector<float>& want, const std::vector<float>& got,
                          float tolerance, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  size_t off = 0, first = 0, worst = 0;
  float worst_excess = 0.0f;
  for (size_t i = 0; i < want.size(); ++i) {
    const float excess = std::fabs(got[i] - want[i]) / (1.0f + std::fabs(want[i]));
    if (!(excess <= tolerance)) {
      if (off++ == 0) first = i;
      if (!(excess <= worst_excess)) worst_excess = excess, worst = i;
    }
  }
  if (off == 0) return;
  ADD_FAILURE() << what << ": " << off << " of " << want.size() << " elements differ by more than "
                << tolerance << " x (1 + |want|); first [" << first << "] got " << got[first]
                << " want " << want[first] << "; worst [" << worst << "] got " << got[worst]
                << " want " << want[worst];
}

// One partition's rows and row-wise Adagrad state, in host memory, and
// for featurized models its nodes' features (CSR), or a feature table
// (rows = vocabulary, no CSR).
struct Rows {
  uint64_t rows = 0;
  int dim = 0;
  std::vector<float> emb, state;
  std::vector<uint64_t> feature_row_start;
  std::vector<FeatureEntry> feature_entries;
  const float* Row(uint32_t r) const { return emb.data() + size_t{r} * dim; }
};

// Gives every row of p 0 to 3 random features of `vocab` (weights in
// [0.5, 2)); a row with none composes to zero (or its id row).
inline void AddRandomFeatures(Rows* p, uint32_t vocab, std::mt19937& rng) {
  p->feature_row_start.assign(1, 0);
  for (uint64_t r = 0; r < p->rows; ++r) {
    const int n = static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) {
      p->feature_entries.push_back({uint32_t(rng() % vocab), 0.5f + (rng() % 1500) / 1000.0f});
    }
    p->feature_row_start.push_back(p->feature_entries.size());
  }
}

inline Rows RandomRows(uint64_t rows, int dim, std::mt19937& rng) {
  Rows p;
  p.rows = rows;
  p.dim = dim;
  std::normal_distribution<float> normal(0.0f, 0.5f);
  p.emb.resize(rows * dim);
  for (float& x : p.emb) x = normal(rng);
  p.state.assign(rows, 0.0f);
  for (uint64_t r = 0; r < rows; r += 3) p.state[r] = 0.5f;  // some history
  return p;
}

struct StepResult {
  std::string error;  // empty on success
  double loss = 0;
  std::vector<float> x;         // the distinct rows as composed
  std::vector<float> dx, drel;  // summed per distinct row, per relation slot
  Rows src, dst;                // the partitions after the step
  Rows features;                // the feature table after the step (featurized)
};

// Runs the step of `plan` on `ops` (stream 0) over copies of src and dst
// (dst == nullptr: the bucket's partitions are one), with `slot_rel` the
// batch's relation snapshot (slots × rel_size floats, or empty).
inline StepResult RunStepOn(DeviceOps& ops, const DeviceBatchPlan& plan,
                            const device::StepShape& sh, const std::vector<float>& slot_rel,
                            const Rows& src, const Rows* dst, uint64_t frozen, float lr,
                            const Rows* features = nullptr) {
  StepResult out;
  out.src = src;
  if (dst != nullptr) out.dst = *dst;
  if (features != nullptr) out.features = *features;
  std::vector<void*> held;
  auto upload = [&](const void* host, size_t bytes) -> void* {
    void* p = nullptr;
    if (out.error.empty()) out.error = ops.Alloc(bytes, &p);
    if (p == nullptr) return nullptr;
    held.push_back(p);
    if (host != nullptr && out.error.empty()) out.error = ops.CopyToDevice(0, p, host, bytes);
    return p;
  };
  auto floats = [&](int64_t n) { return static_cast<float*>(upload(nullptr, sizeof(float) * n)); };
  auto copy = [&](const auto& v) { return upload(v.data(), sizeof(v[0]) * v.size()); };
  const int64_t u = plan.u_node.size(), qr = sh.query_rows(), kr = sh.candidate_rows();
  const int d = sh.dim;
  device::StepArgs a;
  a.q_row = static_cast<const int32_t*>(copy(plan.q_row));
  a.k_row = static_cast<const int32_t*>(copy(plan.k_row));
  a.q_slot = static_cast<const int32_t*>(copy(plan.q_slot));
  a.u_table = static_cast<const uint8_t*>(copy(plan.u_table));
  a.u_node = static_cast<const uint32_t*>(copy(plan.u_node));
  a.slots = sh.rel_size > 0 ? static_cast<int64_t>(plan.slot_relation.size()) : 0;
  a.rel = sh.rel_size > 0 ? static_cast<const float*>(copy(slot_rel)) : nullptr;
  a.distinct = u;
  a.rows[0] = static_cast<float*>(copy(out.src.emb));
  a.state[0] = static_cast<float*>(copy(out.src.state));
  a.rows[1] = dst != nullptr ? static_cast<float*>(copy(out.dst.emb)) : a.rows[0];
  a.state[1] = dst != nullptr ? static_cast<float*>(copy(out.dst.state)) : a.state[0];
  a.frozen[0] = a.frozen[1] = frozen;
  a.lr = lr;
  if (sh.has_features()) {
    a.u_feat_start = static_cast<const int64_t*>(copy(plan.u_feat_start));
    a.u_feat = static_cast<const int32_t*>(copy(plan.u_feat));
    a.u_weight = static_cast<const float*>(copy(plan.u_weight));
    a.f_id = static_cast<const uint32_t*>(copy(plan.f_id));
    a.distinct_features = static_cast<int64_t>(plan.f_id.size());
    a.features = static_cast<float*>(copy(out.features.emb));
    a.feature_state = static_cast<float*>(copy(out.features.state));
    a.dfeat = floats(std::max<int64_t>(1, a.distinct_features * d));
  }
  for (auto [field, n] : {std::pair{&a.x, u * d}, {&a.dx, u * d}, {&a.q, qr * d}, {&a.k, kr * d},
                          {&a.q_aux, qr}, {&a.k_aux, kr},
                          {&a.s, sh.matrices() * sh.chunk * sh.candidates()}, {&a.dq, qr * d},
                          {&a.dk, kr * d}, {&a.coef_q, qr}, {&a.coef_k, kr}, {&a.row_loss, qr},
                          {&a.drel, std::max<int64_t>(1, a.slots * sh.rel_size)}}) {
    *field = floats(n);
  }
  if (out.error.empty()) out.error = ops.Step(0, sh, a);
  std::vector<float> row_loss(qr);
  out.x.resize(u * d);
  out.dx.resize(u * d);
  out.drel.resize(a.slots * sh.rel_size);
  auto download = [&](auto& v, const void* p) {
    if (out.error.empty()) out.error = ops.CopyToHost(0, v.data(), p, sizeof(v[0]) * v.size());
  };
  download(row_loss, a.row_loss);
  download(out.x, a.x);
  if (sh.has_features()) {
    download(out.features.emb, a.features);
    download(out.features.state, a.feature_state);
  }
  download(out.dx, a.dx);
  download(out.drel, a.drel);
  if (sh.has_id_rows()) {
    download(out.src.emb, a.rows[0]);
    download(out.src.state, a.state[0]);
  }
  if (dst != nullptr && sh.has_id_rows()) {
    download(out.dst.emb, a.rows[1]);
    download(out.dst.state, a.state[1]);
  }
  if (out.error.empty()) out.error = ops.Synchronize(0);
  for (float l : row_loss) out.loss += l;
  for (void* p : held) ops.Free(p);
  return out;
}

// A model the device trains, and the batch shape to test it on.
struct StepCase {
  ModelOptions model;
  bool endpoints = false;
  bool two_partitions = false;
  std::string Name() const {
    return absl::StrCat(
        std::string(OperatorName(model.op)), "/", std::string(ComparatorName(model.comparator)),
        "/", std::string(LossName(model.loss)), endpoints ? "/endpoints" : "",
        two_partitions ? "/two partitions" : "",
        model.featurized != FeaturizedMode::kOff
            ? "/" + std::string(FeaturizedModeName(model.featurized))
            : "",
        model.reciprocal ? "/reciprocal" : "",
        model.regularizer == Regularizer::kN3 ? absl::StrCat("/n3 ", model.reg_weight) : "");
  }
};

// Every mixed-form model (SupportsMixedChunks) with and without endpoint
// negatives, on one partition and on two.
inline std::vector<StepCase> DeviceCases(int dim) {
  std::vector<StepCase> out;
  for (int op = 0; op < kNumOperators; ++op) {
    for (int cmp = 0; cmp < kNumComparators; ++cmp) {
      for (int loss = 0; loss < kNumLosses; ++loss) {
        StepCase c;
        c.model.op = static_cast<Operator>(op);
        c.model.comparator = static_cast<Comparator>(cmp);
        c.model.loss = static_cast<Loss>(loss);
        c.model.dim = dim;
        if (!SupportsMixedChunks(c.model)) continue;
        for (bool endpoints : {false, true}) {
          for (bool two : {false, true}) {
            c.endpoints = endpoints;
            c.two_partitions = two;
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

// Reciprocal relations and N3 (model_options.h): every model with an
// operator, reciprocal (all of them train on the device), with and without
// N3, and the 18 mixed-form models with N3; with endpoint negatives on one
// partition or on two, by turns.
inline std::vector<StepCase> ReciprocalAndN3Cases(int dim) {
  std::vector<StepCase> out;
  int turn = 0;
  for (int op = 0; op < kNumOperators; ++op) {
    for (int cmp = 0; cmp < kNumComparators; ++cmp) {
      for (int loss = 0; loss < kNumLosses; ++loss) {
        for (const bool reciprocal : {true, false}) {
          if (reciprocal && op == 0) continue;  // op none has no inverse
          for (const bool n3 : {false, true}) {
            StepCase c;
            c.model.op = static_cast<Operator>(op);
            c.model.comparator = static_cast<Comparator>(cmp);
            c.model.loss = static_cast<Loss>(loss);
            c.model.dim = dim;
            c.model.reciprocal = reciprocal;
            if (n3) {
              c.model.regularizer = Regularizer::kN3;
              c.model.reg_weight = 0.05f;
            }
            if (!SupportsMixedChunks(c.model) || (!reciprocal && !n3)) continue;
            c.endpoints = true;
            c.two_partitions = turn++ % 2 == 1;
            out.push_back(c);
          }
        }
      }
    }
  }
  return out;
}

// A random batch of `edges` edges over few rows (so that negatives repeat
// rows and endpoints meet answers), with a self loop, planned in chunks.
struct StepBatch {
  Rows src, dst;  // dst unused when one partition
  Rows features;  // the feature table (featurized models)
  std::vector<Edge> edges;
  DeviceBatchInput in;
  DeviceBatchPlan plan;
  device::StepShape sh;
  int rel_size = 0;
  std::vector<float> slot_rel;  // the batch's relation snapshot
  const Rows* dst_or_null() const { return in.same_partition ? nullptr : &dst; }
  const Rows& dst_rows() const { return in.same_partition ? src : dst; }
};

inline StepBatch MakeStepBatch(const StepCase& c, int chunk, int negs, int edges,
                               uint64_t src_rows, uint64_t dst_rows, int relations,
                               uint32_t seed) {
  std::mt19937 rng(seed);
  StepBatch b;
  const int dim = c.model.dim;
  b.src = RandomRows(src_rows, dim, rng);
  if (c.two_partitions) b.dst = RandomRows(dst_rows, dim, rng);
  const uint64_t dst_count = c.two_partitions ? dst_rows : src_rows;
  for (int i = 0; i < edges; ++i) {
    b.edges.push_back({uint32_t(rng() % src_rows), uint32_t(rng() % relations),
                       uint32_t(rng() % dst_count)});
  }
  b.edges[1].dst = b.edges[1].src % dst_count;  // a self loop when one table
  b.rel_size = RelationRecordSize(c.model);
  std::vector<float> params(size_t(relations) * b.rel_size);
  std::normal_distribution<float> normal(0.5f, 0.5f);
  for (float& x : params) x = normal(rng);
  b.in.chunk = chunk;
  b.in.negs = negs;
  b.in.endpoints = c.endpoints;
  b.in.same_partition = !c.two_partitions;
  b.in.src_rows = src_rows;
  b.in.dst_rows = dst_count;
  b.in.seed = seed * 31 + 7;
  if (c.model.featurized != FeaturizedMode::kOff) {
    constexpr uint32_t kVocab = 11;
    b.features = RandomRows(kVocab, dim, rng);
    AddRandomFeatures(&b.src, kVocab, rng);
    if (c.two_partitions) AddRandomFeatures(&b.dst, kVocab, rng);
    if (c.model.featurized == FeaturizedMode::kFeatures) {  // no id rows
      for (Rows* p : {&b.src, &b.dst}) {
        p->emb.clear();
        p->state.clear();
      }
    }
    b.in.featurized = static_cast<int>(c.model.featurized);
    for (int t = 0; t < 2; ++t) {
      const Rows& p = t == 0 || !c.two_partitions ? b.src : b.dst;
      b.in.feature_row_start[t] = p.feature_row_start.data();
      b.in.feature_entries[t] = p.feature_entries.data();
    }
  }
  DeviceBatchPlanner planner;
  b.plan = planner.Plan(b.edges, b.in);
  b.sh = ShapeOf(b.plan, b.in, dim, int(c.model.op), int(c.model.comparator), int(c.model.loss),
                 c.model.margin, b.rel_size, c.model.reciprocal,
                 c.model.regularizer == Regularizer::kN3 ? c.model.reg_weight : 0.0f);
  for (uint32_t r : b.plan.slot_relation) {
    b.slot_rel.insert(b.slot_rel.end(), params.begin() + size_t{r} * b.rel_size,
                      params.begin() + size_t{r + 1} * b.rel_size);
  }
  return b;
}

}  // namespace ember::device_test

#endif  // EMBER_TESTS_TRAIN_DEVICE_STEP_UTIL_H_
