#include "plan/memory_model.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>

#include "base/error.h"

namespace parallm {

Precision precision_from_name(const std::string& s) {
  if (s == "fp32") return Precision::FP32;
  if (s == "bf16") return Precision::BF16;
  if (s == "fp16") return Precision::FP16;
  PX_FAIL("unknown precision '{}' (expected fp32, bf16 or fp16)", s);
}

OptimizerKind optimizer_from_name(const std::string& s) {
  if (s == "sgd") return OptimizerKind::SGD;
  if (s == "sgd-momentum") return OptimizerKind::SGDMomentum;
  if (s == "adam") return OptimizerKind::Adam;
  if (s == "adamw") return OptimizerKind::AdamW;
  if (s == "muon") return OptimizerKind::Muon;
  PX_FAIL("unknown optimizer '{}' (expected sgd, sgd-momentum, adam, adamw or muon)", s);
}

Recompute recompute_from_name(const std::string& s) {
  if (s == "none") return Recompute::None;
  if (s == "selective") return Recompute::Selective;
  if (s == "full") return Recompute::Full;
  PX_FAIL("unknown recompute mode '{}' (expected none, selective or full)", s);
}

PipeSchedule schedule_from_name(const std::string& s) {
  if (s == "gpipe") return PipeSchedule::GPipe;
  if (s == "1f1b") return PipeSchedule::OneFOneB;
  if (s == "interleaved") return PipeSchedule::Interleaved;
  if (s == "zb") return PipeSchedule::ZeroBubble;
  PX_FAIL("unknown schedule '{}' (expected gpipe, 1f1b, interleaved or zb)", s);
}

void MemoryQuery::validate() const {
  model.validate();
  PX_CHECK(tp >= 1 && pp >= 1 && dp >= 1 && cp >= 1 && ep >= 1 && virtual_stages >= 1,
           "parallel sizes must be at least 1 (tp {}, pp {}, dp {}, cp {}, ep {}, virtual stages {})",
           tp, pp, dp, cp, ep, virtual_stages);
  PX_CHECK(model.n_heads % tp == 0, "num_attention_heads ({}) is not divisible by tp ({})",
           model.n_heads, tp);
  PX_CHECK(model.n_layers % (pp * virtual_stages) == 0 || virtual_stages == 1,
           "num_layers ({}) is not divisible by pp ({}) x virtual stages ({})", model.n_layers, pp,
           virtual_stages);
  PX_CHECK(model.n_layers >= pp, "num_layers ({}) is smaller than pp ({})", model.n_layers, pp);
  PX_CHECK(seq_len % cp == 0, "seq_len ({}) is not divisible by cp ({})", seq_len, cp);
  PX_CHECK(seq_len > 0 && micro_batch > 0 && micro_batches > 0,
           "seq_len ({}), micro batch ({}) and micro batches ({}) must be positive", seq_len,
           micro_batch, micro_batches);
  PX_CHECK(zero >= 0 && zero <= 3, "zero stage must be 0-3, got {}", zero);
}

namespace {

double optimizer_state_bytes(OptimizerKind k) {  // fp32 states per parameter
  switch (k) {
    case OptimizerKind::SGD: return 0;
    case OptimizerKind::SGDMomentum: return 4;
    case OptimizerKind::Muon: return 4;  // momentum (2-D weights); AdamW rest neglected
    default: return 8;                   // Adam, AdamW: m and v
  }
}

// Korthikanti et al.: 16-bit activation bytes of one layer, one micro-batch.
double layer_activation_bytes(const MemoryQuery& q) {
  const double s = static_cast<double>(q.seq_len) / q.cp, b = q.micro_batch;
  const double h = q.model.hidden, a = q.model.n_heads, t = q.tp;
  const double sbh = s * b * h;
  const double attn = 5.0 * a * s / (h * t);  // softmax input/output and dropout mask
  double rest;
  if (q.sequence_parallel || t == 1) rest = 34.0 / t;
  else rest = 10.0 + 24.0 / t;
  double bytes = 0.0;
  switch (q.recompute) {
    case Recompute::None: bytes = sbh * (rest + attn); break;
    case Recompute::Selective: bytes = sbh * rest; break;
    case Recompute::Full:
      bytes = 2.0 * sbh / (q.sequence_parallel ? t : 1.0);
      break;
  }
  return q.precision == Precision::FP32 ? 2.0 * bytes : bytes;
}

double in_flight(const MemoryQuery& q) {
  const double m = static_cast<double>(q.micro_batches), p = q.pp, v = q.virtual_stages;
  if (q.pp == 1) return 1.0;  // accumulation runs micro-batches one after another
  switch (q.schedule) {
    case PipeSchedule::GPipe: return m;
    case PipeSchedule::Interleaved: return std::min(p, m) * (1.0 + (p - 1.0) / (p * v));
    default: return std::min(p, m);  // 1F1B and ZB-H1 keep at most pp on stage 0
  }
}

}  // namespace

MemoryBreakdown estimate_memory(const MemoryQuery& q) {
  q.validate();
  const ModelConfig& m = q.model;
  const double t = q.tp;
  const int64_t layers_here = (m.n_layers + q.pp - 1) / q.pp;
  const int64_t per_layer = (m.num_parameters() - m.vocab_size * m.hidden * (m.tie_embeddings ? 1 : 2) -
                             (m.uses_learned_positions() ? m.max_positions * m.hidden : 0) -
                             (m.uses_layernorm() ? 2 : 1) * m.hidden) /
                            m.n_layers;
  double params = static_cast<double>(layers_here * per_layer) / t;
  params += static_cast<double>(m.vocab_size * m.hidden) / t;  // embedding on the first stage
  if (m.uses_learned_positions()) params += static_cast<double>(m.max_positions * m.hidden);
  if (q.pp == 1 && !m.tie_embeddings) params += static_cast<double>(m.vocab_size * m.hidden) / t;

  MemoryBreakdown r;
  r.params_per_rank = static_cast<int64_t>(params);
  const bool mixed = q.precision != Precision::FP32;
  const double weight_bytes = mixed ? 2.0 : 4.0;
  const double shards = static_cast<double>(q.dp) * q.cp;
  r.parameters = params * weight_bytes / (q.zero >= 3 ? shards : 1.0);
  r.gradients = params * weight_bytes / (q.zero >= 2 ? shards : 1.0);
  r.optimizer = params * (optimizer_state_bytes(q.optimizer) + (mixed ? 4.0 : 0.0)) /
                (q.zero >= 1 ? shards : 1.0);

  r.activation_per_layer = layer_activation_bytes(q);
  r.micro_batches_in_flight = in_flight(q);
  r.activations = r.activation_per_layer * static_cast<double>(layers_here) * r.micro_batches_in_flight;
  if (q.recompute == Recompute::Full) {  // one layer rebuilt at a time during backward
    MemoryQuery one = q;
    one.recompute = Recompute::None;
    r.activations += layer_activation_bytes(one);
  }
  // Communication buffers: DDP buckets in flight, ZeRO-3 gathered units
  // (current + prefetched), pipeline send/receive activations.
  if (shards > 1 && q.zero <= 1) r.communication += 2.0 * q.bucket_mb * 1024 * 1024;
  if (q.zero >= 3) r.communication += 2.0 * static_cast<double>(per_layer) / t * weight_bytes;
  if (q.pp > 1)
    r.communication += 2.0 * static_cast<double>(q.seq_len) / q.cp * q.micro_batch * m.hidden *
                       (mixed ? 2.0 : 4.0);
  return r;
}

std::vector<MemorySuggestion> suggest_fits(const MemoryQuery& q, double device_bytes) {
  std::vector<std::pair<std::string, std::function<bool(MemoryQuery&)>>> changes = {
      {"--sequence-parallel", [](MemoryQuery& x) { return x.tp > 1 && !x.sequence_parallel ? (x.sequence_parallel = true) : false; }},
      {"--recompute selective", [](MemoryQuery& x) { return x.recompute == Recompute::None ? (x.recompute = Recompute::Selective, true) : false; }},
      {"--zero 1", [](MemoryQuery& x) { return x.dp * x.cp > 1 && x.zero < 1 ? (x.zero = 1, true) : false; }},
      {"--zero 2", [](MemoryQuery& x) { return x.dp * x.cp > 1 && x.zero < 2 ? (x.zero = 2, true) : false; }},
      {"--zero 3", [](MemoryQuery& x) { return x.dp * x.cp > 1 && x.zero < 3 ? (x.zero = 3, true) : false; }},
      {"--recompute full", [](MemoryQuery& x) { return x.recompute != Recompute::Full ? (x.recompute = Recompute::Full, true) : false; }},
      {"--micro-batch-size halved", [](MemoryQuery& x) { return x.micro_batch > 1 ? (x.micro_batch /= 2, x.micro_batches *= 2, true) : false; }},
      {"--tp doubled (dp halved)", [](MemoryQuery& x) { return x.dp % 2 == 0 && x.model.n_heads % (2 * x.tp) == 0 ? (x.tp *= 2, x.dp /= 2, true) : false; }},
      {"--pp doubled (dp halved)", [](MemoryQuery& x) { return x.dp % 2 == 0 && x.model.n_layers >= 2 * x.pp ? (x.pp *= 2, x.dp /= 2, true) : false; }},
  };
  std::vector<MemorySuggestion> out;
  for (auto& [name, apply] : changes) {  // single changes
    MemoryQuery x = q;
    if (!apply(x)) continue;
    double total = estimate_memory(x).total();
    if (total <= device_bytes) out.push_back({name, x, total});
  }
  if (!out.empty()) return out;
  MemoryQuery x = q;  // cumulative, in the same order
  std::string what;
  for (auto& [name, apply] : changes) {
    if (!apply(x)) continue;
    what += (what.empty() ? "" : " ") + name;
    double total = estimate_memory(x).total();
    if (total <= device_bytes) return {{what, x, total}};
  }
  return out;
}

double parse_bytes(const std::string& s) {
  size_t i = 0;
  double v = 0;
  try {
    v = std::stod(s, &i);
  } catch (const std::exception&) {
    PX_FAIL("cannot read a byte count from '{}' (e.g. 80GiB, 24GB)", s);
  }
  std::string unit = s.substr(i);
  const std::pair<const char*, double> kUnits[] = {
      {"", 1},      {"B", 1},          {"KB", 1e3},          {"MB", 1e6},
      {"GB", 1e9},  {"TB", 1e12},      {"KiB", 1024.0},      {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (const auto& [name, mult] : kUnits)
    if (unit == name) return v * mult;
  PX_FAIL("unknown unit '{}' in '{}' (use B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", unit, s);
}

}  // namespace parallm
