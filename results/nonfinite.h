// SQLite has no NaN: binding one stores NULL, which reads back as "not measured". A diverged run is
// exactly when NaN and inf matter, so a row's non-finite values are bound as NULL and named in the
// row's `nonfinite` text column ("train_loss=nan,grad_norm=inf"); reading the row restores them, so
// NaN, inf and a missing value stay three different things after a round trip. SQL readers see
// NULL (aggregates skip it) and can filter on `nonfinite IS NOT NULL`.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace batchlab::results {

// "nan", "inf" or "-inf" for a non-finite value; the shortest round-trip form otherwise.
std::string format_nonfinite(double value);

// Collects the non-finite values of one row while it is being bound.
class NonfiniteWriter {
 public:
  // Returns what to bind: the value when finite, nullopt (SQL NULL) when not, after noting it.
  std::optional<double> note(std::string_view column, double value);
  std::optional<double> note(std::string_view column, const std::optional<double>& value);

  // The text for the row's `nonfinite` column; nullopt when every value was finite.
  std::optional<std::string> text() const;

 private:
  std::string text_;
};

// The parsed `nonfinite` column of one row being read back.
class NonfiniteReader {
 public:
  NonfiniteReader() = default;
  // Throws StoreError (with db_path) on text that does not have the form name=value,...
  NonfiniteReader(const std::optional<std::string>& text, const std::string& db_path);

  // The value to hand back for `column`: what SQLite stored, or, when it stored NULL and the
  // column is named in the text, the non-finite value it stands for.
  std::optional<double> restore(std::string_view column, const std::optional<double>& stored) const;
  // For columns the row struct holds as plain double: a NULL nobody explained reads as NaN.
  double restore_required(std::string_view column, const std::optional<double>& stored) const;

  const std::vector<std::pair<std::string, double>>& values() const noexcept { return values_; }

 private:
  std::vector<std::pair<std::string, double>> values_;
};

}  // namespace batchlab::results
