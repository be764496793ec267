#include "core/config/preconditions.h"

#include <fmt/format.h>

#include <string>
#include <vector>

#include "core/config/schema.h"
#include "core/config/validation.h"
#include "core/errors.h"

namespace batchlab::config {
namespace {

// The single-key rules of one section, run on a copy of the whole config holding just it.
void check_section(std::string_view name, const ExperimentConfig& whole,
                   std::vector<Diagnostic>& out) {
  if (const Section* section = find_section(name)) section->check(whole, out);
}

void raise_if_any(const std::vector<Diagnostic>& problems, std::string_view component) {
  if (problems.empty()) return;
  std::string what;
  for (const auto& d : problems) {
    if (!what.empty()) what += "; ";
    what += d.to_string();
  }
  internal_error(component, what);
}

}  // namespace

void expect_valid(const OptimConfig& optim, std::string_view component) {
  ExperimentConfig whole;
  whole.optim = optim;
  std::vector<Diagnostic> problems;
  check_section("optim", whole, problems);
  validate_optim(optim, problems);
  raise_if_any(problems, component);
}

void expect_valid(const ScheduleConfig& schedule, std::string_view component) {
  ExperimentConfig whole;
  whole.schedule = schedule;
  std::vector<Diagnostic> problems;
  check_section("schedule", whole, problems);
  validate_schedule(schedule, problems);
  raise_if_any(problems, component);
}

void internal_error(std::string_view component, std::string_view what) {
  throw Error(fmt::format(
      "internal error: {} received a config that validation rejects ({}); configs must come "
      "from config::parse_experiment or pass config::validate_experiment",
      component, what));
}

void expect(bool ok, std::string_view component, std::string_view what) {
  if (!ok) internal_error(component, what);
}

}  // namespace batchlab::config
