// The `batchlab` command: subcommand dispatch and the only place where exceptions become messages
// and exit codes (0 ok, 1 a job or command failed, 2 bad input).
#pragma once

#include <string>
#include <vector>

namespace batchlab::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

int run_app(int argc, char** argv);

// Subcommands; each returns an exit code and throws for errors.
int cmd_train(const std::vector<std::string>& args);
int cmd_query(const std::vector<std::string>& args);
int cmd_version(const std::vector<std::string>& args);
int cmd_models(const std::vector<std::string>& args);
int cmd_sweep(const std::vector<std::string>& args);    // cli/sweep_command.cpp
int cmd_results(const std::vector<std::string>& args);  // cli/results_command.cpp
int cmd_data(const std::vector<std::string>& args);     // cli/data_command.cpp
int cmd_report(const std::vector<std::string>& args);   // cli/report_command.cpp
int cmd_plot(const std::vector<std::string>& args);     // cli/plot_command.cpp
int cmd_compare(const std::vector<std::string>& args);  // cli/compare_command.cpp
int cmd_bench(const std::vector<std::string>& args);    // cli/bench_command.cpp
int cmd_export(const std::vector<std::string>& args);   // cli/export_command.cpp
int cmd_serve(const std::vector<std::string>& args);    // cli/serve_command.cpp

}  // namespace batchlab::cli
