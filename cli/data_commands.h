// `batchlab data ...`: dataset preparation. cmd_data (cli/data_command.cpp) dispatches to one
// handler per subcommand; each lives in its own file next to the code it drives.
#pragma once

#include <string>
#include <vector>

namespace batchlab::cli {

// batchlab data pack SRC_DIR --out DIR ...         image folder -> packed shards
// (data_pack_command.cpp)
int cmd_data_pack(const std::vector<std::string>& args);
// batchlab data tokenizer FILES... --out MODEL ...  SentencePiece training (data_text_commands.cpp)
int cmd_data_tokenizer(const std::vector<std::string>& args);
// batchlab data pack-text FILES... --out DIR ...   text -> token shards (data_text_commands.cpp)
int cmd_data_pack_text(const std::vector<std::string>& args);

}  // namespace batchlab::cli
