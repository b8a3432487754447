// Chrome trace JSON (Perfetto, chrome://tracing): {"traceEvents": [...]}
// with one complete ("X") event per timeline event, ts and dur in
// microseconds, pid = rank, tid 0 for compute and 1 for communication, and
// metadata ("M") events naming each process and thread.
// Invariant: the output is valid JSON whatever the names contain.
#pragma once
#include <string>

#include "trace/timeline.h"

namespace parallm::trace {

std::string chrome_trace_json(const Timeline& t);
void write_chrome_trace(const Timeline& t, const std::string& path);  // throws on I/O failure

}  // namespace parallm::trace
