// Exceptions of the dashboard's request handling. The server turns them into HTTP answers (400,
// 404) with the message as JSON; they never reach the terminal. Problems with the database itself
// are results::StoreInputError (at startup: the CLI's exit 2) or results::StoreError (while
// serving: a 503 and a banner on the page).
#pragma once

#include <stdexcept>
#include <string>

namespace batchlab::serve {

// A request parameter the endpoint does not accept, or a value out of its range; `param` names it.
class BadRequest : public std::runtime_error {
 public:
  BadRequest(std::string param, const std::string& message)
      : std::runtime_error(message), param_(std::move(param)) {}
  const std::string& param() const noexcept { return param_; }

 private:
  std::string param_;
};

// A run (or other named thing) the request asks for does not exist in the database.
class NotFound : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace batchlab::serve
