#include "results/errors.h"

#include <utility>

namespace batchlab::results {

namespace {

std::string compose(const std::string& db_path, const std::string& context,
                    const std::string& sqlite_message) {
  std::string text = db_path.empty() ? std::string("<no database>") : db_path;
  text += ": ";
  text += context;
  if (!sqlite_message.empty()) {
    text += ": ";
    text += sqlite_message;
  }
  return text;
}

}  // namespace

StoreError::StoreError(std::string db_path, const std::string& context, std::string sqlite_message)
    : std::runtime_error(compose(db_path, context, sqlite_message)),
      db_path_(std::move(db_path)),
      sqlite_message_(std::move(sqlite_message)) {}

}  // namespace batchlab::results
