#include "plan/processor_sharing.h"

#include <algorithm>

namespace parallm {

double processor_sharing_s(std::vector<double> loads, int threads, int cores) {
  std::sort(loads.begin(), loads.end());
  double t = 0, done = 0;  // every rank still running has done `done` seconds of work
  auto running = static_cast<double>(loads.size());
  for (double w : loads) {
    const double rate = std::min(1.0, cores / (running * threads));
    t += (w - done) / rate;
    done = w;
    running -= 1;
  }
  return t;
}

}  // namespace parallm
