// cpu_isa (see cpu_isa.h). oneDNN keeps the process-wide ISA itself; the cap
// is handed to it once, before any other oneDNN call (it refuses a cap after
// its first ISA query), and the effective ISA is read back from it, so
// oneDNN's kernels and parallm's agree by construction.
#include "kernels/cpu/cpu_isa.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <array>
#include <cctype>

#include "base/env.h"
#include "base/error.h"

namespace parallm::cpu {

namespace {

struct IsaName {
  CpuIsa isa;
  const char* name;
  dnnl::cpu_isa dnnl_isa;
};
constexpr std::array<IsaName, 5> kNames{{
    {CpuIsa::kAvx2, "avx2", dnnl::cpu_isa::avx2},
    {CpuIsa::kAvx512Core, "avx512_core", dnnl::cpu_isa::avx512_core},
    {CpuIsa::kAvx512CoreVnni, "avx512_core_vnni", dnnl::cpu_isa::avx512_core_vnni},
    {CpuIsa::kAvx512CoreBf16, "avx512_core_bf16", dnnl::cpu_isa::avx512_core_bf16},
    {CpuIsa::kAvx512CoreAmx, "avx512_core_amx", dnnl::cpu_isa::avx512_core_amx},
}};

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// oneDNN's ISA values are nested bit masks: a newer ISA holds the older's bits.
bool dnnl_has(dnnl::cpu_isa have, dnnl::cpu_isa want) {
  const auto h = static_cast<unsigned>(have), w = static_cast<unsigned>(want);
  return (h & w) == w;
}

struct Resolved {
  CpuIsa isa;
  std::string cap;  // the variable's value, "" when there is no cap
};

Resolved resolve() {
  const std::string raw = read_max_cpu_isa();
  const std::string cap = lower(raw);
  if (!cap.empty() && cap != "all") {
    const auto it =
        std::find_if(kNames.begin(), kNames.end(), [&](const IsaName& n) { return cap == n.name; });
    PX_CHECK(it != kNames.end(),
             "PARALLM_MAX_CPU_ISA is '{}'; expected one of avx2, avx512_core, avx512_core_vnni, "
             "avx512_core_bf16, "
             "avx512_core_amx, all",
             raw);
    PX_CHECK(dnnl::set_max_cpu_isa(it->dnnl_isa) == dnnl::status::success,
             "oneDNN refused PARALLM_MAX_CPU_ISA={} (it must be applied before oneDNN's first use)",
             raw);
  }
  const dnnl::cpu_isa eff = dnnl::get_effective_cpu_isa();
  CpuIsa isa = CpuIsa::kBaseline;
  for (const IsaName& n : kNames)
    if (dnnl_has(eff, n.dnnl_isa)) isa = n.isa;
  return {isa, cap.empty() || cap == "all" ? std::string() : raw};
}

const Resolved& resolved() {
  static const Resolved r = resolve();  // once per process; constant after
  return r;
}

}  // namespace

CpuIsa cpu_isa() { return resolved().isa; }

std::string cpu_isa_name(CpuIsa isa) {
  for (const IsaName& n : kNames)
    if (n.isa == isa) return n.name;
  return "baseline (below avx2)";
}

std::string cpu_isa_summary() {
  const Resolved& r = resolved();
  std::string s = cpu_isa_name(r.isa);
  if (!r.cap.empty()) s += " (PARALLM_MAX_CPU_ISA=" + r.cap + ")";
  return s;
}

}  // namespace parallm::cpu
