// Routing, capacity and the balancing losses (see moe_router.h). Every
// decision is made per sequence in token order, so a token's fate depends
// only on its own sequence.
#include "model/layers/moe_router.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "base/error.h"

namespace parallm {
namespace {

// The k largest logits of one row, ties to the lower expert index.
void top_k(const float* z, int64_t E, int64_t k, int32_t* out) {
  std::vector<int32_t> idx(E);
  std::iota(idx.begin(), idx.end(), 0);
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(),
                    [&](int32_t a, int32_t b) { return z[a] > z[b] || (z[a] == z[b] && a < b); });
  std::copy(idx.begin(), idx.begin() + k, out);
}

// Marks the assignments of sequence rows [t0, t0 + T) that exceed capacity.
void apply_capacity(const MoeConfig& cfg, Routing& r, int64_t t0) {
  const int64_t cap = cfg.capacity(r.T), k = r.k;
  if (!cfg.capacity_factor) return;
  if (cfg.drop_policy == DropPolicy::Position) {
    std::vector<int64_t> used(r.E, 0);
    for (int64_t t = t0; t < t0 + r.T; ++t)
      for (int64_t j = 0; j < k; ++j) {
        int64_t& u = used[r.expert[t * k + j]];
        r.kept[t * k + j] = u < cap;
        ++u;
      }
    return;
  }
  // Probs: per expert, the cap highest gates (ties: earlier token first).
  std::vector<std::vector<int64_t>> by_expert(r.E);
  for (int64_t a = t0 * k; a < (t0 + r.T) * k; ++a) by_expert[r.expert[a]].push_back(a);
  for (auto& list : by_expert) {
    std::stable_sort(list.begin(), list.end(),
                     [&](int64_t a, int64_t b) { return r.gate[a] > r.gate[b]; });
    for (size_t i = 0; i < list.size(); ++i) r.kept[list[i]] = static_cast<int64_t>(i) < cap;
  }
}

}  // namespace

Routing route(const MoeConfig& cfg, const float* logits, int64_t N, int64_t T) {
  PX_CHECK(T > 0 && N % T == 0, "moe routing needs whole sequences (rows {}, T {})", N, T);
  Routing r;
  r.N = N, r.E = cfg.num_experts, r.k = cfg.topk, r.T = T;
  const int64_t E = r.E, k = r.k;
  r.expert.resize(N * k);
  r.gate.resize(N * k);
  r.kept.assign(N * k, 1);
  r.probs.resize(N * E);
  r.lse.resize(N);
  for (int64_t t = 0; t < N; ++t) {
    const float* z = logits + t * E;
    const float mx = *std::max_element(z, z + E);
    double s = 0.0;
    for (int64_t i = 0; i < E; ++i) s += std::exp(static_cast<double>(z[i] - mx));
    r.lse[t] = static_cast<float>(mx + std::log(s));
    for (int64_t i = 0; i < E; ++i)
      r.probs[t * E + i] = static_cast<float>(std::exp(static_cast<double>(z[i] - mx)) / s);
    int32_t* e = &r.expert[t * k];
    float* g = &r.gate[t * k];
    top_k(z, E, k, e);
    if (cfg.order == RouterOrder::TopkSoftmax) {
      double sk = 0.0;  // z[e[0]] is the largest
      for (int64_t j = 0; j < k; ++j) sk += std::exp(static_cast<double>(z[e[j]] - z[e[0]]));
      for (int64_t j = 0; j < k; ++j)
        g[j] = static_cast<float>(std::exp(static_cast<double>(z[e[j]] - z[e[0]])) / sk);
    } else {
      double sk = 0.0;
      for (int64_t j = 0; j < k; ++j) sk += r.probs[t * E + e[j]];
      for (int64_t j = 0; j < k; ++j)
        g[j] = cfg.renormalize ? static_cast<float>(r.probs[t * E + e[j]] / sk)
                               : r.probs[t * E + e[j]];
    }
  }
  const int64_t S = N / T;
  r.f.assign(S * E, 0.0f);
  MoeStats& st = r.stats;
  st.expert_load.assign(E, 0.0);
  for (int64_t b = 0; b < S; ++b) {
    apply_capacity(cfg, r, b * T);
    std::vector<double> count(E, 0.0), P(E, 0.0);
    for (int64_t t = b * T; t < (b + 1) * T; ++t) {
      for (int64_t j = 0; j < k; ++j) {
        count[r.expert[t * k + j]] += 1.0;
        if (!r.kept[t * k + j]) st.dropped += 1.0;
      }
      for (int64_t i = 0; i < E; ++i) P[i] += r.probs[t * E + i];
      st.z_sum += static_cast<double>(r.lse[t]) * r.lse[t];
    }
    double aux = 0.0;
    for (int64_t i = 0; i < E; ++i) {
      const double f = count[i] / static_cast<double>(T * k);
      r.f[b * E + i] = static_cast<float>(f);
      aux += f * (P[i] / static_cast<double>(T));
      st.expert_load[i] += count[i];
    }
    st.aux_sum += static_cast<double>(E) * aux;
  }
  st.sequences = static_cast<double>(S);
  st.tokens = static_cast<double>(N);
  st.assignments = static_cast<double>(N * k);
  return r;
}

void route_backward(const MoeConfig& cfg, const Routing& r, const float* dgate, double grad_scale,
                    float* dlogits) {
  const int64_t E = r.E, k = r.k;
  const double aux_w = grad_scale * cfg.aux_loss_coeff * static_cast<double>(E);
  const double z_w = grad_scale * cfg.z_loss_coeff * 2.0;
  std::vector<double> dp(E);
  for (int64_t t = 0; t < r.N; ++t) {
    const float* p = &r.probs[t * E];
    const int32_t* e = &r.expert[t * k];
    const float* g = &r.gate[t * k];
    float* dz = dlogits + t * E;
    double gdg = 0.0;  // sum_j g_j dg_j over the kept assignments
    for (int64_t j = 0; j < k; ++j)
      if (r.kept[t * k + j]) gdg += static_cast<double>(g[j]) * dgate[t * k + j];
    // d loss / d p over all experts: the aux loss's (dense) and, under
    // SoftmaxTopk, the gates' (sparse).
    const float* f = &r.f[(t / r.T) * E];
    for (int64_t i = 0; i < E; ++i) dp[i] = aux_w * f[i];
    if (cfg.order == RouterOrder::SoftmaxTopk) {
      double S = 0.0;
      for (int64_t j = 0; j < k; ++j) S += p[e[j]];
      for (int64_t j = 0; j < k; ++j) {
        const double dg = r.kept[t * k + j] ? dgate[t * k + j] : 0.0;
        dp[e[j]] += cfg.renormalize ? (dg - gdg) / S : dg;
      }
    } else {  // softmax over the k kept logits
      for (int64_t j = 0; j < k; ++j) {
        const double dg = r.kept[t * k + j] ? dgate[t * k + j] : 0.0;
        dz[e[j]] += static_cast<float>(g[j] * (dg - gdg));
      }
    }
    double pdp = 0.0;
    for (int64_t i = 0; i < E; ++i) pdp += p[i] * dp[i];
    for (int64_t i = 0; i < E; ++i)
      dz[i] += static_cast<float>(p[i] * (dp[i] - pdp) + z_w * r.lse[t] * p[i]);
  }
}

}  // namespace parallm
