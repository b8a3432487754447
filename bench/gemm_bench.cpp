// Single-precision GEMM throughput: OpenBLAS cblas_sgemm vs oneDNN (dnnl_sgemm,
// the f32 matmul primitive, and the bf16 x bf16 -> f32 matmul primitive) at the
// shapes of GPT-2 124M training with B*T = 1024 rows, plus a 2048^3 square.
// Layout follows kernels/cpu/matmul.h: forward out = inp * W^T (W is (OC, IC)),
// dinp += dout * W, dW += dout^T * inp; backward products accumulate (beta 1).
// Each cell is the best time over rounds x repetitions (other work on the 2-core
// machine only ever slows a run down). Output: a Markdown table per thread count;
// --determinism instead checks for identical bits at 1 and 2 threads.
#include <cblas.h>
#include <fmt/format.h>
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tensor/half.h"

namespace {

struct Shape {
  std::string name;
  bool trans_a, trans_b;
  int64_t m, n, k;
  float beta;
  double gflop() const { return 2.0 * double(m) * double(n) * double(k) * 1e-9; }
};

struct Options {
  std::vector<int> threads{1, 2};
  int rounds = 3;
  double min_time_s = 0.3;
  bool bf16 = true;
  bool quick = false;          // drop the LM head shapes (the slow ones)
  bool openblas_only = false;  // e.g. to rerun under another OPENBLAS_CORETYPE
  bool determinism = false;    // only check: same bits at 1 and 2 threads?
  std::string only;            // run only shapes whose name contains this
};

constexpr int64_t kRows = 1024;  // B * T

std::vector<Shape> gpt2_shapes(bool quick) {
  struct Layer {
    const char* name;
    int64_t ic, oc;
  };
  std::vector<Layer> layers = {
      {"qkv", 768, 2304}, {"attn.proj", 768, 768}, {"fc", 768, 3072}, {"fc.proj", 3072, 768}};
  if (!quick) layers.push_back({"lm_head", 768, 50304});
  std::vector<Shape> out;
  for (const Layer& l : layers) {
    out.push_back({std::string(l.name) + " fwd", false, true, kRows, l.oc, l.ic, 0.0f});
    out.push_back({std::string(l.name) + " dinp", false, false, kRows, l.ic, l.oc, 1.0f});
    out.push_back({std::string(l.name) + " dW", true, false, l.oc, l.ic, kRows, 1.0f});
  }
  out.push_back({"square 2048", false, false, 2048, 2048, 2048, 0.0f});
  return out;
}

// Operands stored as the BLAS call sees them: A is (K, M) when transposed, etc.
struct Operands {
  int64_t lda, ldb, ldc;
  std::vector<float> a, b, c;
  std::vector<uint16_t> a16, b16;
  explicit Operands(const Shape& s) {
    lda = s.trans_a ? s.m : s.k;
    ldb = s.trans_b ? s.k : s.n;
    ldc = s.n;
    std::mt19937 gen(42);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    a.resize(size_t(s.m * s.k));
    b.resize(size_t(s.k * s.n));
    c.assign(size_t(s.m * s.n), 0.0f);
    for (float& x : a) x = dist(gen);
    for (float& x : b) x = dist(gen);
    a16.resize(a.size());
    b16.resize(b.size());
    for (size_t i = 0; i < a.size(); ++i) a16[i] = parallm::f32_to_bf16(a[i]);
    for (size_t i = 0; i < b.size(); ++i) b16[i] = parallm::f32_to_bf16(b[i]);
  }
};

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Best seconds per call: one untimed call, then at least 2 calls and min_time_s.
double best_time(const std::function<void()>& fn, double min_time_s) {
  fn();
  double best = 1e30, start = now_s();
  for (int rep = 0; rep < 2 || now_s() - start < min_time_s; ++rep) {
    double t0 = now_s();
    fn();
    best = std::min(best, now_s() - t0);
  }
  return best;
}

void check_dnnl(dnnl_status_t st, const char* what) {
  if (st != dnnl_success) {
    std::fprintf(stderr, "%s failed with status %d\n", what, int(st));
    std::exit(1);
  }
}

// A oneDNN matmul primitive for one shape and data type; beta 1 is a sum post-op.
struct DnnlMatmul {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
  dnnl::matmul prim;
  dnnl::memory a, b, c;
  std::string impl;

  DnnlMatmul(const Shape& s, Operands& ops, bool bf16) {
    using dnnl::memory;
    auto dt = bf16 ? memory::data_type::bf16 : memory::data_type::f32;
    auto tag = [](bool t) { return t ? memory::format_tag::ba : memory::format_tag::ab; };
    memory::desc a_md({s.m, s.k}, dt, tag(s.trans_a));
    memory::desc b_md({s.k, s.n}, dt, tag(s.trans_b));
    memory::desc c_md({s.m, s.n}, memory::data_type::f32, memory::format_tag::ab);
    dnnl::primitive_attr attr;
    if (s.beta != 0.0f) {
      dnnl::post_ops po;
      po.append_sum(s.beta);
      attr.set_post_ops(po);
    }
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, eng);
    impl = pd.impl_info_str();
    prim = dnnl::matmul(pd);
    void* pa = bf16 ? static_cast<void*>(ops.a16.data()) : static_cast<void*>(ops.a.data());
    void* pb = bf16 ? static_cast<void*>(ops.b16.data()) : static_cast<void*>(ops.b.data());
    a = memory(a_md, eng, pa);
    b = memory(b_md, eng, pb);
    c = memory(c_md, eng, ops.c.data());
  }
  void run() {
    prim.execute(strm, {{DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, b}, {DNNL_ARG_DST, c}});
    strm.wait();
  }
};

void run_openblas(const Shape& s, Operands& o) {
  cblas_sgemm(CblasRowMajor, s.trans_a ? CblasTrans : CblasNoTrans,
              s.trans_b ? CblasTrans : CblasNoTrans, blasint(s.m), blasint(s.n), blasint(s.k), 1.0f,
              o.a.data(), blasint(o.lda), o.b.data(), blasint(o.ldb), s.beta, o.c.data(),
              blasint(o.ldc));
}

void run_dnnl_sgemm(const Shape& s, Operands& o) {
  check_dnnl(dnnl_sgemm(s.trans_a ? 'T' : 'N', s.trans_b ? 'T' : 'N', s.m, s.n, s.k, 1.0f,
                        o.a.data(), o.lda, o.b.data(), o.ldb, s.beta, o.c.data(), o.ldc),
             "dnnl_sgemm");
}

// max |x - ref| / max |ref| of one fresh product (C zeroed, so beta does not matter).
double rel_err(const std::vector<float>& x, const std::vector<float>& ref) {
  double num = 0, den = 1e-30;
  for (size_t i = 0; i < x.size(); ++i) {
    num = std::max(num, double(std::fabs(x[i] - ref[i])));
    den = std::max(den, double(std::fabs(ref[i])));
  }
  return num / den;
}

struct Row {
  double gf_blas = 0, gf_sgemm = 0, gf_mm = 0, gf_bf16 = 0;
  double err_sgemm = 0, err_mm = 0, err_bf16 = 0;
  std::string impl_mm, impl_bf16;
};

void set_threads(int n) {
  openblas_set_num_threads(n);
  omp_set_num_threads(n);
}

// Lets the other library's worker threads stop spinning before the next timing.
void settle() { std::this_thread::sleep_for(std::chrono::milliseconds(300)); }

Row measure(const Shape& s, const Options& opt) {
  Operands ops(s);
  Row row;
  auto fresh = [&](const std::function<void()>& fn) {
    std::fill(ops.c.begin(), ops.c.end(), 0.0f);
    fn();
    return ops.c;
  };
  DnnlMatmul mm(s, ops, false);
  std::unique_ptr<DnnlMatmul> mm16;
  if (opt.bf16) mm16 = std::make_unique<DnnlMatmul>(s, ops, true);
  std::vector<float> ref = fresh([&] { run_openblas(s, ops); });
  if (opt.openblas_only) {
    for (int r = 0; r < opt.rounds; ++r)
      row.gf_blas = std::max(row.gf_blas,
                             s.gflop() / best_time([&] { run_openblas(s, ops); }, opt.min_time_s));
    return row;
  }
  row.err_sgemm = rel_err(fresh([&] { run_dnnl_sgemm(s, ops); }), ref);
  row.err_mm = rel_err(fresh([&] { mm.run(); }), ref);
  if (mm16) row.err_bf16 = rel_err(fresh([&] { mm16->run(); }), ref);
  row.impl_mm = mm.impl;
  if (mm16) row.impl_bf16 = mm16->impl;

  for (int r = 0; r < opt.rounds; ++r) {
    auto gf = [&](double t) { return s.gflop() / t; };
    row.gf_blas =
        std::max(row.gf_blas, gf(best_time([&] { run_openblas(s, ops); }, opt.min_time_s)));
    settle();
    row.gf_sgemm =
        std::max(row.gf_sgemm, gf(best_time([&] { run_dnnl_sgemm(s, ops); }, opt.min_time_s)));
    row.gf_mm = std::max(row.gf_mm, gf(best_time([&] { mm.run(); }, opt.min_time_s)));
    if (mm16)
      row.gf_bf16 = std::max(row.gf_bf16, gf(best_time([&] { mm16->run(); }, opt.min_time_s)));
    settle();
  }
  return row;
}

// Whether each library gives the same bits at 1 and 2 threads: layout-invariance
// tests compare runs that use different thread counts.
void check_determinism(const std::vector<Shape>& shapes) {
  std::printf("\n| shape | OpenBLAS 1 vs 2 threads | dnnl_sgemm 1 vs 2 threads |\n|---|---|---|\n");
  for (const Shape& s : shapes) {
    Operands ops(s);
    auto fresh = [&](int threads, bool dnnl) {
      set_threads(threads);
      std::fill(ops.c.begin(), ops.c.end(), 0.0f);
      if (dnnl)
        run_dnnl_sgemm(s, ops);
      else
        run_openblas(s, ops);
      return ops.c;
    };
    auto verdict = [&](bool dnnl) {
      std::vector<float> one = fresh(1, dnnl), two = fresh(2, dnnl);
      return std::memcmp(one.data(), two.data(), one.size() * sizeof(float)) == 0
                 ? "identical"
                 : fmt::format("differs (rel {:.1e})", rel_err(two, one));
    };
    std::string blas = verdict(false), dnnl = verdict(true);
    std::printf("| %s | %s | %s |\n", s.name.c_str(), blas.c_str(), dnnl.c_str());
  }
}

const char* isa_name(dnnl_cpu_isa_t isa) {
  switch (isa) {
    case dnnl_cpu_isa_avx2:
      return "avx2";
    case dnnl_cpu_isa_avx512_core:
      return "avx512_core";
    case dnnl_cpu_isa_avx512_core_vnni:
      return "avx512_core_vnni";
    case dnnl_cpu_isa_avx512_core_bf16:
      return "avx512_core_bf16";
    case dnnl_cpu_isa_avx512_core_amx:
      return "avx512_core_amx";
    default:
      return "other";
  }
}

Options parse(int argc, char** argv) {
  Options opt;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--threads") {
      opt.threads.clear();
      std::string v = next();
      for (size_t p = 0; p < v.size();) {
        size_t q = v.find(',', p);
        opt.threads.push_back(std::atoi(v.substr(p, q - p).c_str()));
        p = q == std::string::npos ? v.size() : q + 1;
      }
    } else if (a == "--rounds") {
      opt.rounds = std::atoi(next().c_str());
    } else if (a == "--min-time") {
      opt.min_time_s = std::atof(next().c_str());
    } else if (a == "--no-bf16") {
      opt.bf16 = false;
    } else if (a == "--quick") {
      opt.quick = true;
    } else if (a == "--only") {
      opt.only = next();
    } else if (a == "--determinism") {
      opt.determinism = true;
    } else if (a == "--openblas-only") {
      opt.openblas_only = true;
      opt.bf16 = false;
    } else {
      std::fprintf(stderr,
                   "usage: gemm_bench [--threads 1,2] [--rounds 3] [--min-time 0.3] [--no-bf16] "
                   "[--quick] [--openblas-only] [--determinism] [--only NAME_PART]\n");
      std::exit(a == "--help" || a == "-h" ? 0 : 2);
    }
  }
  return opt;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt = parse(argc, argv);
  const dnnl_version_t* v = dnnl_version();
  const char* coretype = std::getenv("OPENBLAS_CORETYPE");
  std::printf(
      "OpenBLAS: %s, kernels for core %s (OPENBLAS_CORETYPE=%s)\n"
      "oneDNN %d.%d.%d, effective ISA %s\n",
      openblas_get_config(), openblas_get_corename(), coretype ? coretype : "unset", v->major,
      v->minor, v->patch, isa_name(dnnl_get_effective_cpu_isa()));
  std::vector<Shape> shapes = gpt2_shapes(opt.quick);
  std::erase_if(shapes, [&](const Shape& s) { return s.name.find(opt.only) == std::string::npos; });
  if (opt.determinism) {
    check_determinism(shapes);
    return 0;
  }
  for (int t : opt.threads) {
    set_threads(t);
    std::printf("\n### %d thread%s (GFLOP/s, best of %d rounds)\n\n", t, t == 1 ? "" : "s",
                opt.rounds);
    std::printf(
        "| shape | op | M x N x K | OpenBLAS | dnnl_sgemm | dnnl matmul f32 | "
        "dnnl matmul bf16 | best dnnl f32 / OpenBLAS |\n");
    std::printf("|---|---|---|---:|---:|---:|---:|---:|\n");
    double peak = 0, sum_blas = 0, sum_dnnl = 0, flops = 0;
    std::string peak_where, impls;
    for (const Shape& s : shapes) {
      Row r = measure(s, opt);
      double best_dnnl = opt.openblas_only ? r.gf_blas : std::max(r.gf_sgemm, r.gf_mm);
      auto cell = [](double g) { return g > 0 ? fmt::format("{:.1f}", g) : std::string("-"); };
      std::printf("| %s | %s%s | %lldx%lldx%lld | %s | %s | %s | %s | %.2f |\n", s.name.c_str(),
                  s.trans_a ? "T" : "N", s.trans_b ? "T" : "N", (long long)s.m, (long long)s.n,
                  (long long)s.k, cell(r.gf_blas).c_str(), cell(r.gf_sgemm).c_str(),
                  cell(r.gf_mm).c_str(), cell(r.gf_bf16).c_str(), best_dnnl / r.gf_blas);
      std::fflush(stdout);
      for (double g : {r.gf_blas, r.gf_sgemm, r.gf_mm}) {
        if (g > peak) {
          peak = g;
          peak_where = s.name;
        }
      }
      if (s.name.rfind("square", 0) != 0) {  // training mix: time-weighted by flops
        flops += s.gflop();
        sum_blas += s.gflop() / r.gf_blas;
        sum_dnnl += s.gflop() / best_dnnl;
      }
      if (r.err_sgemm > 1e-4 || r.err_mm > 1e-4 || (opt.bf16 && r.err_bf16 > 5e-2))
        std::printf("WARNING %s: rel err vs OpenBLAS sgemm %.2e, matmul %.2e, bf16 %.2e\n",
                    s.name.c_str(), r.err_sgemm, r.err_mm, r.err_bf16);
      if (impls.find(r.impl_mm + "/" + r.impl_bf16) == std::string::npos)
        impls += " " + r.impl_mm + "/" + r.impl_bf16;
    }
    std::printf(
        "\ntraining-shape mix (flop-weighted): OpenBLAS %.1f GFLOP/s, best oneDNN f32 "
        "%.1f GFLOP/s\n",
        flops / sum_blas, flops / sum_dnnl);
    std::printf("peak f32 at %d thread%s: %.1f GFLOP/s (%s)\n", t, t == 1 ? "" : "s", peak,
                peak_where.c_str());
    std::printf("oneDNN matmul implementations (f32/bf16):%s\n", impls.c_str());
  }
  return 0;
}
