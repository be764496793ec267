# `batchlab serve` (serve/): the dashboard needs cpp-httplib (Debian's libcpp-httplib-dev) and the
# web packages that scripts/setup.sh installs from npm into serve/web/node_modules (uPlot, which is
# embedded into the binary here, never copied into the repository).
#   -DBATCHLAB_SERVE=AUTO  build it when both are present (default; e.g. the GPU kit, whose machine
#                          reaches no npm registry, builds without it)
#   -DBATCHLAB_SERVE=ON    stop the configure when either is missing (scripts/build.sh)
#   -DBATCHLAB_SERVE=OFF   never build it
# Sets BATCHLAB_WITH_SERVE and, when on, the target batchlab_serve.
set(BATCHLAB_SERVE AUTO CACHE STRING "Build the dashboard `batchlab serve`: AUTO, ON or OFF")
set_property(CACHE BATCHLAB_SERVE PROPERTY STRINGS AUTO ON OFF)

set(batchlab_web_dir ${PROJECT_SOURCE_DIR}/serve/web)
set(batchlab_uplot_dir ${batchlab_web_dir}/node_modules/uplot/dist)
pkg_check_modules(HTTPLIB IMPORTED_TARGET cpp-httplib)

set(batchlab_serve_missing "")
if(NOT HTTPLIB_FOUND)
  set(batchlab_serve_missing "cpp-httplib (libcpp-httplib-dev) is not installed")
elseif(NOT EXISTS ${batchlab_uplot_dir}/uPlot.iife.min.js)
  set(batchlab_serve_missing "uPlot is not in serve/web/node_modules (npm ci in serve/web)")
endif()

set(BATCHLAB_WITH_SERVE OFF)
set(batchlab_serve_why "")
if(BATCHLAB_SERVE STREQUAL "OFF")
  set(batchlab_serve_why " (-DBATCHLAB_SERVE=OFF)")
elseif(batchlab_serve_missing)
  if(BATCHLAB_SERVE STREQUAL "ON")
    message(FATAL_ERROR "batchlab serve: ${batchlab_serve_missing}. Run `bash scripts/setup.sh`, "
                        "or configure with -DBATCHLAB_SERVE=OFF to build without the dashboard.")
  endif()
  set(batchlab_serve_why " (${batchlab_serve_missing})")
else()
  set(BATCHLAB_WITH_SERVE ON)
endif()
message(STATUS "batchlab: serve ${BATCHLAB_WITH_SERVE}${batchlab_serve_why}")

if(BATCHLAB_WITH_SERVE)
  # URL path | file | content type, for every file the page loads.
  set(batchlab_assets
    "/|${batchlab_web_dir}/index.html|text/html"
    "/assets/app.js|${batchlab_web_dir}/app.js|application/javascript"
    "/assets/app.css|${batchlab_web_dir}/app.css|text/css"
    "/assets/uPlot.iife.min.js|${batchlab_uplot_dir}/uPlot.iife.min.js|application/javascript"
    "/assets/uPlot.min.css|${batchlab_uplot_dir}/uPlot.min.css|text/css")
  set(asset_files "")
  foreach(entry ${batchlab_assets})
    string(REPLACE "|" ";" parts "${entry}")
    list(GET parts 1 file)
    list(APPEND asset_files ${file})
  endforeach()
  set(assets_cpp ${PROJECT_BINARY_DIR}/generated/serve_assets.cpp)
  set(assets_list ${PROJECT_BINARY_DIR}/generated/serve_assets.list)
  string(REPLACE ";" "\n" assets_lines "${batchlab_assets}")
  file(CONFIGURE OUTPUT ${assets_list} CONTENT "${assets_lines}\n")
  add_custom_command(OUTPUT ${assets_cpp}
    COMMAND ${CMAKE_COMMAND} -DLIST=${assets_list} -DOUT=${assets_cpp}
            -P ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
    DEPENDS ${asset_files} ${assets_list} ${PROJECT_SOURCE_DIR}/cmake/embed_assets.cmake
    COMMENT "Embedding the dashboard's web assets" VERBATIM)
  batchlab_add_library(batchlab_serve serve LIBS batchlab_analysis batchlab_results
    PkgConfig::HTTPLIB nlohmann_json::nlohmann_json fmt::fmt ZLIB::ZLIB Threads::Threads)
  target_sources(batchlab_serve PRIVATE ${assets_cpp})
endif()
