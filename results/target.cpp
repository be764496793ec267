#include "results/target.h"

namespace batchlab::results {

bool Target::lower_is_better() const { return metric.find("loss") != std::string::npos; }

bool Target::at_least_as_good(double measured, double level) const {
  return lower_is_better() ? measured <= level : measured >= level;
}

}  // namespace batchlab::results
