// The dashboard's web assets, compiled into the binary by cmake/embed_assets.cmake from serve/web
// (the page, its script and style) and /usr/share/javascript/dygraphs (the chart library dygraphs,
// Debian's libjs-dygraphs), so `batchlab serve` needs no files next to it at run time and serves
// nothing from the file system.
#pragma once

#include <string_view>
#include <vector>

namespace batchlab::serve {

struct Asset {
  std::string_view path;          // the URL path it answers, e.g. "/assets/app.js"
  std::string_view content_type;  // e.g. "text/javascript; charset=utf-8"
  std::string_view body;
};

// Every embedded asset (defined in the generated serve_assets.cpp).
const std::vector<Asset>& assets();

// The asset served at exactly `path`, or nullptr. Only whole-path matches: no path is ever mapped
// onto the file system, so "..", encoded slashes and the like find nothing.
const Asset* find_asset(std::string_view path);

}  // namespace batchlab::serve
