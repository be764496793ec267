#include "sweeps/study/budget_decisions.h"

#include <algorithm>

namespace batchlab::sweeps::study {

namespace {

// A member is done with a rung when it has a value there, or can never get one: it diverged, or
// it trained to the rung (or past it) and its metric there was not finite.
bool finished_rung(const PointView& p, int64_t step) {
  if (p.metric.count(step) > 0) return true;
  if (p.running) return false;
  return p.diverged || p.last_step >= step;
}

}  // namespace

std::optional<double> value_at(const PointView& p, int64_t step) {
  const auto it = p.metric.find(step);
  if (it == p.metric.end()) return std::nullopt;
  return it->second;
}

bool better(double a, double b, bool lower_is_better) { return lower_is_better ? a < b : a > b; }

std::vector<size_t> promote(const std::vector<PointView>& points,
                            const std::vector<size_t>& members, int64_t step, int64_t eta,
                            bool lower_is_better) {
  std::vector<size_t> ranked;
  for (size_t m : members) {
    if (value_at(points[m], step)) ranked.push_back(m);
  }
  std::stable_sort(ranked.begin(), ranked.end(), [&](size_t a, size_t b) {
    const double va = *value_at(points[a], step), vb = *value_at(points[b], step);
    if (va != vb) return better(va, vb, lower_is_better);
    return a < b;
  });
  const size_t keep = (members.size() + static_cast<size_t>(eta) - 1) / static_cast<size_t>(eta);
  if (ranked.size() > keep) ranked.resize(keep);
  return ranked;
}

HalvingStep halving_step(const std::vector<PointView>& points, const std::vector<int64_t>& rungs,
                         int64_t eta, bool lower_is_better) {
  HalvingStep out;
  out.last_rung.assign(points.size(), 0);
  std::vector<size_t> members(points.size());
  for (size_t i = 0; i < points.size(); ++i) members[i] = i;
  for (size_t k = 0; k < rungs.size(); ++k) {
    out.rung = k;
    out.members = members;
    for (size_t m : members) out.last_rung[m] = k;
    bool waiting = false;
    for (size_t m : members) {
      if (finished_rung(points[m], rungs[k])) continue;
      waiting = true;
      if (!points[m].running) out.to_start.push_back(m);
    }
    if (waiting) return out;
    const bool last = k + 1 == rungs.size();
    auto next = promote(points, members, rungs[k],
                        last ? static_cast<int64_t>(members.size()) : eta, lower_is_better);
    if (last || next.empty()) {
      out.complete = true;
      if (!next.empty()) out.best = next.front();
      return out;
    }
    members = std::move(next);
  }
  out.complete = true;  // no rungs at all: nothing to decide
  return out;
}

}  // namespace batchlab::sweeps::study
