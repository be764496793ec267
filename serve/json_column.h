// One column of the current row of a statement as JSON, by its SQLite storage class: integers stay
// integers, reals reals, NULL is null (a missing or non-finite value: results/nonfinite.h), text
// text. The API's row builders use it so every endpoint renders a column the same way.
#pragma once

#include <sqlite3.h>

#include <nlohmann/json.hpp>

#include "results/sqlite_util.h"

namespace batchlab::serve {

inline nlohmann::json column_json(results::Statement& s, int i) {
  switch (sqlite3_column_type(s.get(), i)) {
    case SQLITE_INTEGER:
      return s.column_int64(i);
    case SQLITE_FLOAT:
      return s.column_double(i);
    case SQLITE_NULL:
      return nullptr;
    default:
      return s.column_text(i);
  }
}

}  // namespace batchlab::serve
