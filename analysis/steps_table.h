// A published steps-to-target table as a study (issue 46): `batchlab report --steps-csv FILE` reads
// a CSV of (series, batch, steps[, seed][, target]) rows, one per measured batch (and seed), into
// the study records the report fits, so a paper's numbers go through the same fit of
// S(B) = S_min + E_min / B, the same intervals (with 3 or more seeds a batch) and the same
// definitions of the critical batch (results/critical_batch.h) as a batchlab study.
//
// The file: a header line naming the columns, then comma-separated rows; no quoting (a field with a
// quote is refused). `columns` maps the roles to the header's names, so a table keeps its own
// ("series=model,batch=batch_sequences,steps=min_steps_to_goal,target=goal_val_loss" for
// docs/data/critical_batch/zhang2024_min_steps.csv). Every row is a reached cell: the table gives
// steps to the target, not runs that missed it.
#pragma once

#include <string>

#include "analysis/study_records.h"

namespace batchlab::analysis {

struct StepsColumns {
  std::string series = "series", batch = "batch", steps = "steps";
  std::string seed = "seed";  // optional: every row seed 0 when the header lacks it
  std::string target;         // optional: the target each row's steps reach ("" = none named)
};

// "series=model,batch=batch_sequences": the roles given replace the defaults. Throws InputError for
// an unknown role or an entry without '=' (naming it and the roles).
StepsColumns parse_steps_columns(const std::string& spec);

// The table as study records: one reached cell per row (series as the optimizer, steps as
// steps_to_target, samples = steps x batch), no trials. Throws InputError naming the file, the
// line and the value for a missing file, a header without a required column, a row with the wrong
// number of fields, a batch that is not a positive integer, steps or a seed that are not numbers,
// non-positive steps, or a table without rows.
StudyRecords read_steps_csv(const std::string& path, const StepsColumns& columns);

}  // namespace batchlab::analysis
