// GET /api/layers: one run's per-layer statistics as a layer x step matrix for the heatmap (the
// LARS paper's figure of weight/gradient norm ratios per layer over training). Layers come in
// natural name order (layer2 before layer10, so a ResNet's stages read top to bottom); when the
// run recorded more steps than the page can draw, evenly spaced recorded steps are kept (not
// averaged: each column is a real measurement).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "results/sqlite_util.h"
#include "serve/api_runs.h"

namespace batchlab::serve {

// Parameters: run=ID (required), metric=ratio|trust_ratio|weight_norm|grad_norm|update_norm,
// steps=N. Answers {"run_id", "metric", "layers", "steps", "values", "min", "max"}.
nlohmann::json layers_endpoint(results::Connection& db, const Query& query);

// Natural order: digit runs compare as numbers ("layer2.0" < "layer10.0").
bool natural_less(const std::string& a, const std::string& b);

}  // namespace batchlab::serve
