# `batchlab serve` (serve/): the dashboard needs cpp-httplib (Debian's libcpp-httplib-dev) and the
# chart library dygraphs (Debian's libjs-dygraphs, /usr/share/javascript/dygraphs), whose
# dygraph.min.js and dygraph.min.css are embedded into the binary here. Nothing comes from npm.
#   -DBATCHLAB_SERVE=AUTO  build it when both are present (default; a machine without them, such as
#                          the GPU kit's, builds without the dashboard)
#   -DBATCHLAB_SERVE=ON    stop the configure when either is missing (scripts/build.sh)
#   -DBATCHLAB_SERVE=OFF   never build it
# -DBATCHLAB_DYGRAPHS_JS=PATH and -DBATCHLAB_DYGRAPHS_CSS=PATH name other copies of the two files.
# Sets BATCHLAB_WITH_SERVE and, when on, the target batchlab_serve.
set(BATCHLAB_SERVE AUTO CACHE STRING "Build the dashboard `batchlab serve`: AUTO, ON or OFF")
set_property(CACHE BATCHLAB_SERVE PROPERTY STRINGS AUTO ON OFF)

set(batchlab_web_dir ${PROJECT_SOURCE_DIR}/serve/web)
pkg_check_modules(HTTPLIB IMPORTED_TARGET cpp-httplib)
find_file(BATCHLAB_DYGRAPHS_JS dygraph.min.js PATHS /usr/share/javascript/dygraphs NO_DEFAULT_PATH
  DOC "dygraphs' dygraph.min.js, embedded into `batchlab serve` (Debian: libjs-dygraphs)")
find_file(BATCHLAB_DYGRAPHS_CSS dygraph.min.css PATHS /usr/share/javascript/dygraphs NO_DEFAULT_PATH
  DOC "dygraphs' dygraph.min.css, embedded into `batchlab serve` (Debian: libjs-dygraphs)")

set(batchlab_serve_missing "")
if(NOT HTTPLIB_FOUND)
  set(batchlab_serve_missing "cpp-httplib (libcpp-httplib-dev) is not installed")
elseif(NOT EXISTS "${BATCHLAB_DYGRAPHS_JS}" OR NOT EXISTS "${BATCHLAB_DYGRAPHS_CSS}")
  string(CONCAT batchlab_serve_missing "the chart library dygraphs is not installed: no "
    "dygraph.min.js and dygraph.min.css in /usr/share/javascript/dygraphs (Debian package "
    "libjs-dygraphs: apt-get install libjs-dygraphs)")
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
    "/assets/dygraph.min.js|${BATCHLAB_DYGRAPHS_JS}|application/javascript"
    "/assets/dygraph.min.css|${BATCHLAB_DYGRAPHS_CSS}|text/css")
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
