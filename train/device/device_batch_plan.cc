#include "train/device/device_batch_plan.h"

#include <algorithm>
#include <cmath>

#include "storage/base/splitmix.h"

namespace ember {
namespace {

// As the CPU trainer's SampleNegativeRows draws them.
void SampleNegatives(uint64_t rows, int n, SplitMix64& rng, std::vector<uint32_t>* ids) {
  ids->resize(n);
  if (rows >= uint64_t(4) * n) {
    const uint32_t start = static_cast<uint32_t>(rng.Below(rows - n + 1));
    for (int k = 0; k < n; ++k) (*ids)[k] = start + k;
  } else {
    for (int k = 0; k < n; ++k) (*ids)[k] = static_cast<uint32_t>(rng.Below(rows));
  }
}

}  // namespace

int32_t DeviceBatchPlanner::Distinct(int table, uint32_t node) {
  const uint64_t key = (uint64_t(table) << 32) | node;
  const auto [it, added] = distinct_.try_emplace(key, static_cast<int32_t>(plan_.u_node.size()));
  if (added) {
    plan_.u_table.push_back(static_cast<uint8_t>(table));
    plan_.u_node.push_back(node);
    if (in_.featurized != 0) AddFeatures(table, node);
  }
  return it->second;
}

void DeviceBatchPlanner::AddFeatures(int table, uint32_t node) {
  const uint64_t lo = in_.feature_row_start[table][node];
  const uint64_t hi = in_.feature_row_start[table][node + 1];
  const FeatureEntry* entries = in_.feature_entries[table];
  float sum = 0.0f;
  for (uint64_t e = lo; e < hi; ++e) sum += entries[e].weight;
  const float inv = 1.0f / sum;
  if (hi > lo && sum != 0.0f && std::isfinite(inv)) {
    for (uint64_t e = lo; e < hi; ++e) {
      const uint32_t f = entries[e].feature;
      const auto [it, added] = features_.try_emplace(f, static_cast<int32_t>(plan_.f_id.size()));
      if (added) plan_.f_id.push_back(f);
      plan_.u_feat.push_back(it->second);
      plan_.u_weight.push_back(entries[e].weight * inv);
    }
  }
  plan_.u_feat_start.push_back(static_cast<int64_t>(plan_.u_feat.size()));
}

const DeviceBatchPlan& DeviceBatchPlanner::Plan(std::span<const Edge> edges,
                                                const DeviceBatchInput& in) {
  const int c = in.chunk;
  const int n = c + in.negs + (in.endpoints ? c : 0);
  const int chunks = static_cast<int>((edges.size() + c - 1) / c);
  const int64_t edge_slots = int64_t{chunks} * c;
  plan_.chunks = chunks;
  plan_.last_valid = static_cast<int>(edges.size() - size_t(chunks - 1) * c);
  plan_.q_row.assign(2 * edge_slots, -1);
  plan_.k_row.assign(2 * int64_t{chunks} * n, -1);
  plan_.q_slot.assign(edge_slots, 0);
  plan_.u_table.clear();
  plan_.u_node.clear();
  plan_.slot_relation.clear();
  plan_.u_feat_start.assign(1, 0);
  plan_.u_feat.clear();
  plan_.u_weight.clear();
  plan_.f_id.clear();
  // Abseil's clear() frees tables over 127 slots: reserve the batch's
  // worst case at once rather than grow by rehashing.
  distinct_.clear();
  distinct_.reserve(2 * edges.size() + 2 * size_t(chunks) * in.negs);
  slots_.clear();
  // The last batch's count: a fair guess for this one's, so that the table
  // does not regrow from empty every batch.
  const size_t last_features = features_.size();
  features_.clear();
  features_.reserve(last_features);
  in_ = in;
  const int src_table = 0;
  const int dst_table = in.same_partition ? 0 : 1;
  SplitMix64 rng(in.seed);
  for (int ch = 0; ch < chunks; ++ch) {
    const size_t first = size_t(ch) * c;
    const int valid = ch == chunks - 1 ? plan_.last_valid : c;
    int32_t* q0 = &plan_.q_row[int64_t{ch} * c];               // side 0 queries: L
    int32_t* q1 = &plan_.q_row[edge_slots + int64_t{ch} * c];  // side 1 queries: R
    int32_t* k0 = &plan_.k_row[int64_t{ch} * n];               // side 0: [R; Ud; L]
    int32_t* k1 = &plan_.k_row[(int64_t{chunks} + ch) * n];    // side 1: [L; Us; R]
    for (int i = 0; i < valid; ++i) {
      const Edge& e = edges[first + i];
      const int32_t l = Distinct(src_table, e.src);
      const int32_t r = Distinct(dst_table, e.dst);
      q0[i] = l;
      q1[i] = r;
      k0[i] = r;
      k1[i] = l;
      if (in.endpoints) {
        k0[c + in.negs + i] = l;
        k1[c + in.negs + i] = r;
      }
      const auto [it, added] =
          slots_.try_emplace(e.rel, static_cast<int32_t>(plan_.slot_relation.size()));
      if (added) plan_.slot_relation.push_back(e.rel);
      plan_.q_slot[first + i] = it->second;
    }
    if (in.negs > 0) {
      SampleNegatives(in.src_rows, in.negs, rng, &src_negs_);
      SampleNegatives(in.dst_rows, in.negs, rng, &dst_negs_);
      for (int j = 0; j < in.negs; ++j) {
        k0[c + j] = Distinct(dst_table, dst_negs_[j]);
        k1[c + j] = Distinct(src_table, src_negs_[j]);
      }
    }
  }
  return plan_;
}

device::StepShape ShapeOf(const DeviceBatchPlan& plan, const DeviceBatchInput& in, int dim, int op,
                          int cmp, int loss, float margin, int rel_size, bool reciprocal,
                          float n3) {
  device::StepShape sh;
  sh.dim = dim;
  sh.chunk = in.chunk;
  sh.negs = in.negs;
  sh.endpoints = in.endpoints ? in.chunk : 0;
  sh.chunks = plan.chunks;
  sh.last_valid = plan.last_valid;
  sh.op = op;
  sh.cmp = cmp;
  sh.loss = loss;
  sh.margin = margin;
  sh.rel_size = rel_size;
  sh.reciprocal = reciprocal ? 1 : 0;
  sh.n3 = n3;
  sh.featurized = in.featurized;
  return sh;
}

}  // namespace ember
