#include "train/resilience/planted_failure.h"

#include <signal.h>

#include <cstdio>

#include "base/child_process.h"
#include "base/error.h"

namespace parallm {

std::vector<PlantedFailure> parse_planted_failures(const std::string& spec) {
  std::vector<PlantedFailure> out;
  for (const std::string& part : split_list(spec, ',')) {
    const size_t a = part.find('@'), c = part.find(':');
    PX_CHECK(a != std::string::npos && c != std::string::npos && a < c,
             "plant_failures: '{}' is not KIND@STEP:RANK", part);
    const std::string kind = part.substr(0, a);
    PlantedFailure f{};
    if (kind == "kill")
      f.kind = FailureKind::Kill;
    else if (kind == "stop")
      f.kind = FailureKind::Stop;
    else if (kind == "error")
      f.kind = FailureKind::Error;
    else
      PX_FAIL("plant_failures: unknown kind '{}' in '{}' (kill, stop or error)", kind, part);
    try {
      f.step = std::stoll(part.substr(a + 1, c - a - 1));
      f.rank = std::stoi(part.substr(c + 1));
    } catch (const std::exception&) {
      PX_FAIL("plant_failures: '{}' is not KIND@STEP:RANK", part);
    }
    PX_CHECK(f.step > 0 && f.rank >= 0, "plant_failures: '{}' needs STEP > 0 and RANK >= 0", part);
    out.push_back(f);
  }
  return out;
}

std::optional<PlantedFailure> failure_for(const std::vector<PlantedFailure>& plan, int attempt,
                                          int rank) {
  if (attempt < 0 || attempt >= static_cast<int>(plan.size())) return std::nullopt;
  const PlantedFailure& f = plan[static_cast<size_t>(attempt)];
  if (f.rank != rank) return std::nullopt;
  return f;
}

const char* failure_kind_name(FailureKind k) {
  return k == FailureKind::Kill ? "kill" : k == FailureKind::Stop ? "stop" : "error";
}

void maybe_fail(const std::optional<PlantedFailure>& f, int64_t done) {
  if (!f || f->step != done) return;
  // The supervisor times detection from this line (docs/resilience.md).
  std::fprintf(stderr, "parallm: planted %s on rank %d after step %lld\n", failure_kind_name(f->kind),
               f->rank, static_cast<long long>(done));
  std::fflush(stderr);
  switch (f->kind) {
    case FailureKind::Kill:
      raise(SIGKILL);
      break;
    case FailureKind::Stop:
      raise(SIGSTOP);
      break;
    case FailureKind::Error:
      PX_FAIL("planted failure: an error after step {}", done);
  }
}

}  // namespace parallm
