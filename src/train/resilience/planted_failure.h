// Failures planted on purpose, for the chaos tests of the supervisor
// (docs/resilience.md): "KIND@STEP:RANK,..." where KIND is kill (the rank
// SIGKILLs itself), stop (it SIGSTOPs itself: a hang the others' watchdog
// must end) or error (it throws, as a failed kernel or a bad file would).
// The i-th failure belongs to attempt i of a supervised job, so each is
// planted once however often the steps before it are redone.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace parallm {

enum class FailureKind { Kill, Stop, Error };

struct PlantedFailure {
  FailureKind kind;
  int64_t step;  // after this many steps are done
  int rank;
};

const char* failure_kind_name(FailureKind k);

// Parses the setting; an error names the part that is wrong.
std::vector<PlantedFailure> parse_planted_failures(const std::string& spec);

// The failure of attempt `attempt` (0-based) on `rank`, if any.
std::optional<PlantedFailure> failure_for(const std::vector<PlantedFailure>& plan, int attempt,
                                          int rank);

// Carries the failure out when `done` steps are finished: kill and stop do
// not return (until a SIGCONT); error throws.
void maybe_fail(const std::optional<PlantedFailure>& f, int64_t done);

}  // namespace parallm
