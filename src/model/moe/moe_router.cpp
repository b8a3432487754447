// Routing, capacity and the balancing losses (see moe_router.h). Every
// decision is made per sequence in token order, so a token's fate depends
// only on its own sequence.
#include "model/moe/moe_router.h"

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

// DeepSeek-V3's group-limited choice: choice (E) holds the scores the top-k
// is taken on; the experts outside the group_topk groups of the highest
// (best + second best choice) are set to 0, as transformers' DeepseekV3
// router masks them (sigmoid scores are positive; a negative expert bias
// could rank a masked expert above an allowed one, as there).
void limit_to_groups(const MoeConfig& cfg, float* choice, int64_t E) {
  const int G = cfg.num_groups;
  const int64_t per = E / G;
  std::vector<float> group_score(G);
  for (int g = 0; g < G; ++g) {
    float best = -INFINITY, second = -INFINITY;
    for (int64_t i = g * per; i < (g + 1) * per; ++i) {
      if (choice[i] > best) {
        second = best;
        best = choice[i];
      } else if (choice[i] > second) {
        second = choice[i];
      }
    }
    group_score[g] = best + second;
  }
  std::vector<int32_t> keep(cfg.group_topk);
  top_k(group_score.data(), G, cfg.group_topk, keep.data());
  std::vector<uint8_t> allowed(G, 0);
  for (int32_t g : keep) allowed[g] = 1;
  for (int64_t i = 0; i < E; ++i)
    if (!allowed[i / per]) choice[i] = 0.0f;
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

// The probabilities the aux loss averages for token t: softmax, or the
// sigmoid scores divided by their sum over all experts (k > 1; Megatron).
void aux_probs(const MoeConfig& cfg, const Routing& r, int64_t t, double* q) {
  const int64_t E = r.E;
  if (cfg.score == ScoreFunction::Softmax) {
    for (int64_t i = 0; i < E; ++i) q[i] = r.probs[t * E + i];
    return;
  }
  const float* s = &r.scores[t * E];
  double sum = 0.0;
  for (int64_t i = 0; i < E; ++i) sum += s[i];
  for (int64_t i = 0; i < E; ++i) q[i] = r.k > 1 ? s[i] / sum : s[i];
}

// route_backward under sigmoid scores: d loss / d s from the gates (g_j =
// c s_j / sum of the chosen s when k > 1, c the topk scaling factor) and the aux loss (q_i = s_i / sum of
// all s when k > 1), then through the sigmoid; the z-loss acts on the
// logits through softmax as under softmax scores.
void sigmoid_backward(const Routing& r, const float* dgate, double aux_w, double z_w, double c,
                      float* dlogits) {
  const int64_t E = r.E, k = r.k;
  std::vector<double> ds(E);
  for (int64_t t = 0; t < r.N; ++t) {
    const float* s = &r.scores[t * E];
    const float* p = &r.probs[t * E];
    const int32_t* e = &r.expert[t * k];
    const float* g = &r.gate[t * k];
    const float* f = &r.f[(t / r.T) * E];
    double all = 0.0, chosen = 0.0, gdg = 0.0;
    for (int64_t i = 0; i < E; ++i) all += s[i];
    for (int64_t j = 0; j < k; ++j) {
      chosen += s[e[j]];
      if (r.kept[t * k + j]) gdg += static_cast<double>(g[j]) * dgate[t * k + j];
    }
    double qdq = 0.0;  // sum_i q_i dq_i with dq_i = aux_w f_i
    for (int64_t i = 0; i < E; ++i) qdq += s[i] / all * aux_w * f[i];
    for (int64_t i = 0; i < E; ++i) ds[i] = k > 1 ? (aux_w * f[i] - qdq) / all : aux_w * f[i];
    // g_j = c s_j / chosen: d/ds_j = (c dg_j - sum_l g_l dg_l) / chosen.
    for (int64_t j = 0; j < k; ++j) {
      const double dg = r.kept[t * k + j] ? c * dgate[t * k + j] : 0.0;
      ds[e[j]] += k > 1 ? (dg - gdg) / chosen : dg;
    }
    float* dz = dlogits + t * E;
    for (int64_t i = 0; i < E; ++i)
      dz[i] += static_cast<float>(static_cast<double>(s[i]) * (1.0 - s[i]) * ds[i] +
                                  z_w * r.lse[t] * p[i]);
  }
}

}  // namespace

Routing route(const MoeConfig& cfg, const float* logits, int64_t N, int64_t T, const float* bias) {
  PX_CHECK(T > 0 && N % T == 0, "moe routing needs whole sequences (rows {}, T {})", N, T);
  const bool sig = cfg.score == ScoreFunction::Sigmoid;
  PX_CHECK(bias == nullptr || sig, "the moe expert bias needs sigmoid scores");
  Routing r;
  r.N = N, r.E = cfg.num_experts, r.k = cfg.topk, r.T = T;
  const int64_t E = r.E, k = r.k;
  r.expert.resize(N * k);
  r.gate.resize(N * k);
  r.kept.assign(N * k, 1);
  r.probs.resize(N * E);
  r.lse.resize(N);
  if (sig) r.scores.resize(N * E);
  // The aux loss's choice when the bias moved the real one: top-k of s.
  std::vector<int32_t> aux_expert(bias != nullptr ? N * k : 0);
  std::vector<float> biased(E);
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
    if (sig) {
      float* sc = &r.scores[t * E];
      for (int64_t i = 0; i < E; ++i)
        sc[i] = static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(z[i]))));
      for (int64_t i = 0; i < E; ++i) biased[i] = bias != nullptr ? sc[i] + bias[i] : sc[i];
      if (cfg.num_groups > 1) limit_to_groups(cfg, biased.data(), E);
      top_k(biased.data(), E, k, e);
      if (bias != nullptr) top_k(sc, E, k, &aux_expert[t * k]);
      double sk = 0.0;  // Megatron normalises whenever k > 1
      for (int64_t j = 0; j < k; ++j) sk += sc[e[j]];
      const double c = cfg.topk_scaling_factor;
      for (int64_t j = 0; j < k; ++j)
        g[j] = static_cast<float>(c * (k > 1 ? sc[e[j]] / sk : sc[e[j]]));
      continue;
    }
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
  const std::vector<int32_t>& counted = bias != nullptr ? aux_expert : r.expert;
  const int64_t S = N / T;
  r.f.assign(S * E, 0.0f);
  MoeStats& st = r.stats;
  st.expert_load.assign(E, 0.0);
  std::vector<double> q(E);
  for (int64_t b = 0; b < S; ++b) {
    apply_capacity(cfg, r, b * T);
    std::vector<double> count(E, 0.0), P(E, 0.0);
    for (int64_t t = b * T; t < (b + 1) * T; ++t) {
      for (int64_t j = 0; j < k; ++j) {
        count[counted[t * k + j]] += 1.0;
        st.expert_load[r.expert[t * k + j]] += 1.0;
        if (!r.kept[t * k + j]) st.dropped += 1.0;
      }
      aux_probs(cfg, r, t, q.data());
      for (int64_t i = 0; i < E; ++i) P[i] += q[i];
      st.z_sum += static_cast<double>(r.lse[t]) * r.lse[t];
    }
    double aux = 0.0;
    for (int64_t i = 0; i < E; ++i) {
      const double f = count[i] / static_cast<double>(T * k);
      r.f[b * E + i] = static_cast<float>(f);
      aux += f * (P[i] / static_cast<double>(T));
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
  if (cfg.score == ScoreFunction::Sigmoid) {
    sigmoid_backward(r, dgate, aux_w, z_w, cfg.topk_scaling_factor, dlogits);
    return;
  }
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
