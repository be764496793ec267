#include "serve/assets.h"

namespace batchlab::serve {

const Asset* find_asset(std::string_view path) {
  for (const Asset& a : assets()) {
    if (a.path == path) return &a;
  }
  return nullptr;
}

}  // namespace batchlab::serve
