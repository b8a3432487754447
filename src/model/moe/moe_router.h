// The MoE router's decisions as pure functions (docs/moe.md): logits (N, E)
// in sequences of T rows -> each token's top-k experts, gates, and which
// assignments survive capacity; and the backward from the gates' gradient,
// the Switch load-balancing loss and the router z-loss to the logits.
// Definitions (per sequence b of T tokens, p = softmax(logits) over all E):
//   f_i = tokens of b choosing expert i (before dropping) / (T k)
//   P_i = mean over b's tokens of p_i;  aux_b = E sum_i f_i P_i
// Sigmoid scores (Megatron): p_i is s_i / sum_i s_i (k > 1; s_i for k = 1)
// with s = sigmoid(logits), and f_i counts the top-k of the unbiased s (the
// expert bias moves the choice, not the aux loss's counts).
//   loss += aux_coeff * mean over the global batch's sequences of aux_b
//         + z_coeff * mean over the global batch's tokens of logsumexp^2
// grad_scale is the model's 1 / global tokens (times the loss scale), so the
// sequence mean is grad_scale * T * sum_b: nothing depends on the layout.
#pragma once
#include <cstdint>
#include <vector>

#include "model/moe/moe_stats.h"
#include "model/moe/moe_config.h"

namespace parallm {

struct Routing {
  int64_t N = 0, E = 0, k = 0, T = 0;
  std::vector<int32_t> expert;  // (N, k): chosen experts, by descending logit (score + bias)
  std::vector<float> gate;      // (N, k): combine weights
  std::vector<uint8_t> kept;    // (N, k): 1 unless dropped by capacity
  std::vector<float> probs;     // (N, E): softmax over all experts
  std::vector<float> scores;    // (N, E): sigmoid of the logits (sigmoid scores only)
  std::vector<float> lse;       // (N): logsumexp of the logits
  std::vector<float> f;         // (N/T, E): f_i of each sequence
  MoeStats stats;               // this call's contribution
};

// Rows are sequences of T tokens (N % T == 0). bias (E): the layer's expert
// bias (sigmoid scores only), added to the scores for the choice alone.
Routing route(const MoeConfig& cfg, const float* logits, int64_t N, int64_t T,
              const float* bias = nullptr);

// dlogits (N, E) += d loss / d logits, given dgate (N, k) = d loss / d gate
// (dropped entries are ignored) plus both balancing losses at grad_scale.
void route_backward(const MoeConfig& cfg, const Routing& r, const float* dgate, double grad_scale,
                    float* dlogits);

}  // namespace parallm
