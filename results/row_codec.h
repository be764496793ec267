// How each per-step row struct maps onto its table: the column list and the binding/reading code
// in one place per table, so the INSERT and SELECT statements can never disagree on column order.
// Internal to results/ (Store and its readers use it).
#pragma once

#include <string>
#include <vector>

#include "results/rows.h"
#include "results/sqlite_util.h"

namespace batchlab::results {

template <class Row>
struct RowCodec;

// Each specialization offers:
//   table                   the table name
//   columns()               every column, in bind/read order (nonfinite last where it exists)
//   order_by                the sort of a run's rows when read back
//   bind(stmt, row)         binds parameters 1..columns().size()
//   read(stmt, db_path)     reads result columns 0..columns().size()-1
#define BATCHLAB_RESULTS_DECLARE_CODEC(RowType)                             \
  template <>                                                               \
  struct RowCodec<RowType> {                                                \
    static const char* const table;                                         \
    static const char* const order_by;                                      \
    static const std::vector<std::string>& columns();                       \
    static void bind(Statement& stmt, const RowType& row);                  \
    static RowType read(const Statement& stmt, const std::string& db_path); \
  }

BATCHLAB_RESULTS_DECLARE_CODEC(StepRow);
BATCHLAB_RESULTS_DECLARE_CODEC(EvalRow);
BATCHLAB_RESULTS_DECLARE_CODEC(LayerStatRow);
BATCHLAB_RESULTS_DECLARE_CODEC(NoiseRow);
BATCHLAB_RESULTS_DECLARE_CODEC(MilestoneRow);
BATCHLAB_RESULTS_DECLARE_CODEC(RunRow);
BATCHLAB_RESULTS_DECLARE_CODEC(SweepRow);
BATCHLAB_RESULTS_DECLARE_CODEC(StudyCellRow);
BATCHLAB_RESULTS_DECLARE_CODEC(StudyTrialRow);
BATCHLAB_RESULTS_DECLARE_CODEC(BudgetCellRow);
BATCHLAB_RESULTS_DECLARE_CODEC(BudgetTrialRow);

#undef BATCHLAB_RESULTS_DECLARE_CODEC

// "a, b, c" and "?1, ?2, ?3" for a column list.
std::string join_columns(const std::vector<std::string>& columns);
std::string placeholders(std::size_t count);

}  // namespace batchlab::results
