#include "comm/communicator.h"

#include <fmt/format.h>

namespace parallm::comm {

std::string Communicator::label() const {
  return fmt::format("group '{}' (rank {} of {})", name(), rank(), size());
}

void Communicator::run(const OpSpec& s) {
  validate(s, rank(), size(), name());
  do_run(s);
}

Work Communicator::start(const OpSpec& s) {
  validate(s, rank(), size(), name());
  return do_start(s);
}

}  // namespace parallm::comm
