// Compression of the dashboard's answers. cpp-httplib compresses on its own only the content types
// it knows verbatim, and with brotli at quality 11 when a browser offers br: about 2 s for a
// heatmap answer on a 2-core machine. So the server compresses JSON and scripts itself, with gzip
// at a level chosen for the size (JSON: fast level 1, about 5x smaller; embedded scripts: best
// level, once at startup), under content types cpp-httplib leaves alone.
#pragma once

#include <string>
#include <string_view>

namespace batchlab::serve {

// True when an Accept-Encoding header value accepts gzip (a "gzip" or "*" token without q=0).
bool accepts_gzip(std::string_view accept_encoding);

// `data` as a gzip stream at zlib `level` (1 fastest .. 9 smallest). Throws std::runtime_error
// only when zlib fails (out of memory).
std::string gzip(std::string_view data, int level);

// v rounded to `digits` significant digits, so that JSON writes it short ("0.1235", not
// "0.12345678901234566"); non-finite values pass through.
double round_significant(double v, int digits);

}  // namespace batchlab::serve
