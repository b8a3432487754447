// The run's settings as a Markdown reference (docs/settings.md is this
// text for run_schema(); `parallm settings` prints it, and a test holds the
// file to it, so the reference cannot drift from the declarations).
#pragma once
#include <string>

#include "train/config/run_schema.h"

namespace parallm {

std::string settings_reference(const RunSchema& schema);

}  // namespace parallm
