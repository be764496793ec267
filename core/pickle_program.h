// A pickle program (Python's pickle format, the data.pkl and constants.pkl of a LibTorch or
// torch.save archive) split into its instructions, without running it.
//
// Why: LibTorch's unpickler trusts what a program declares. It allocates a string as long as a
// BINUNICODE's 4-byte length says before it reads a byte of it (a 5.7 KB checkpoint claiming an
// 890 MB string took 1.5 GB), and it grows its memo table to the largest index a PUT names. Its
// readers in batchlab (models/state_dict_pickle.h, core/train/checkpoint_pickles.h) split the
// program here first: every argument must lie inside the program's bytes, so no length can claim
// more than the record holds; what the instructions then build is bounded by their callers (depth
// by core/pickle_nesting.h).
//
// Understood: the opcodes of pickle protocols 0-3, which is what LibTorch's pickler writes and
// torch.save's default protocol 2 uses. Protocol 4 and 5 opcodes (framing, MEMOIZE,
// STACK_GLOBAL, the 8-byte lengths) are reported as unsupported.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace batchlab::pickle {

// Opcodes the readers look at by name (Python's Lib/pickletools.py documents each).
inline constexpr uint8_t kMark = '(';
inline constexpr uint8_t kStop = '.';
inline constexpr uint8_t kBuild = 'b';
inline constexpr uint8_t kGlobal = 'c';
inline constexpr uint8_t kEmptyDict = '}';
inline constexpr uint8_t kEmptyTuple = ')';
inline constexpr uint8_t kReduce = 'R';
inline constexpr uint8_t kBinGet = 'h';
inline constexpr uint8_t kLongBinGet = 'j';
inline constexpr uint8_t kBinPut = 'q';
inline constexpr uint8_t kLongBinPut = 'r';
inline constexpr uint8_t kTuple = 't';
inline constexpr uint8_t kTuple2 = 0x86;
inline constexpr uint8_t kSetItem = 's';
inline constexpr uint8_t kSetItems = 'u';
inline constexpr uint8_t kAppend = 'a';
inline constexpr uint8_t kAppends = 'e';
inline constexpr uint8_t kBinPersId = 'Q';

// One instruction: bytes [begin, end) of the program, its argument from arg_begin.
struct Op {
  uint8_t code = 0;
  size_t begin = 0;
  size_t arg_begin = 0;
  size_t end = 0;
};

// The instructions up to and including STOP, or the first problem (empty `problem` when there is
// none): "the pickle program is truncated" (an argument or a length past the end), "the pickle
// program ends without STOP", or an opcode outside protocols 0-3 (naming it and its byte).
struct Program {
  std::vector<Op> ops;
  std::string problem;
  bool unsupported_opcode = false;  // the problem is an opcode outside protocols 0-3
};

Program split_program(std::string_view bytes);

// The memo slot a GET or PUT instruction names (BINGET, LONG_BINGET, BINPUT, LONG_BINPUT);
// nullopt for every other instruction.
std::optional<uint32_t> memo_index(std::string_view bytes, const Op& op);
bool is_put(const Op& op);

// LibTorch's unpickler grows its memo table to the largest slot a PUT names (a 314-byte program
// naming slot 0x72727272 had it allocate 30.7 GB). A program of n instructions can fill at most n
// slots, so both readers refuse a PUT past that: this describes the first such PUT ("a PUT at
// byte B names memo slot S in a program of n instructions ..."), or is empty when there is none.
std::string memo_slot_problem(std::string_view bytes, const std::vector<Op>& ops);

// The argument bytes of an instruction whose argument is a length and the bytes it counts (the
// strings: BINUNICODE, SHORT_BINSTRING, ...); the whole argument for the others.
std::string_view counted_bytes(std::string_view bytes, const Op& op);

// The little-endian integer an integer instruction pushes (BININT1, BININT2, BININT, and LONG1
// of up to 8 bytes); nullopt for other instructions.
std::optional<int64_t> integer_value(std::string_view bytes, const Op& op);

}  // namespace batchlab::pickle
