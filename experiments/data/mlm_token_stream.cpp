#include "experiments/data/mlm_token_stream.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "core/errors.h"
#include "experiments/data/tokenizer.h"

namespace batchlab::data {

TokenStream::TokenStream(std::shared_ptr<const TokenShards> shards, int64_t begin, int64_t end)
    : shards_(std::move(shards)), begin_(begin), end_(end) {
  const auto& starts = shards_->document_starts();
  doc_stream_start_.resize(starts.size());
  // Document d's tokens begin after the d separators of the documents before it.
  for (size_t d = 0; d < starts.size(); ++d)
    doc_stream_start_[d] = starts[d] + static_cast<int64_t>(d);
  if (begin < 0 || begin > end || end > doc_stream_start_.back()) {
    throw Error(fmt::format("token stream range [{}, {}) outside [0, {})", begin, end,
                            doc_stream_start_.back()));
  }
}

int64_t TokenStream::total_stream_length(const TokenShards& shards) {
  return shards.num_tokens() + shards.num_documents();
}

void TokenStream::copy(int64_t pos, int64_t n, int64_t* out) const {
  int64_t at = begin_ + pos;
  // The document holding `at`: the last one starting at or before it.
  auto it = std::upper_bound(doc_stream_start_.begin(), doc_stream_start_.end(), at);
  auto doc = static_cast<int64_t>(it - doc_stream_start_.begin()) - 1;
  int64_t offset = at - doc_stream_start_[doc];
  while (n > 0) {
    const int64_t len = shards_->document_length(doc);
    if (offset < len) {
      const int64_t k = std::min(n, len - offset);
      shards_->copy_tokens(doc, offset, k, out);
      out += k;
      n -= k;
      offset += k;
    } else {
      *out++ = kSepId;  // the separator after document `doc`
      --n;
      ++doc;
      offset = 0;
    }
  }
}

StreamSplits split_stream(const std::shared_ptr<const TokenShards>& shards,
                          double held_out_fraction) {
  const int64_t total = TokenStream::total_stream_length(*shards);
  const auto target =
      static_cast<int64_t>(std::floor((1.0 - held_out_fraction) * static_cast<double>(total)));
  const auto& starts = shards->document_starts();
  int64_t boundary = target;
  for (int64_t d = 1; d < shards->num_documents(); ++d) {
    const int64_t s = starts[d] + d;
    if (s >= target) {
      // A document boundary, unless it would keep less than half the intended held-out part.
      if (2 * (total - s) >= total - target) boundary = s;
      break;
    }
  }
  return {TokenStream(shards, 0, boundary), TokenStream(shards, boundary, total)};
}

}  // namespace batchlab::data
