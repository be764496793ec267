// Makes a file written by Python's `torch.save(model.state_dict(), f)` readable by LibTorch's
// `torch::pickle_load`.
//
// Why this exists: LibTorch 1.13's unpickler (torch/csrc/jit/serialization/unpickler.cpp) knows
// `collections.OrderedDict` only as the unused backward-hooks argument of a pickled tensor and
// turns it into None, and it treats the BUILD opcode like REDUCE (a call of a registered global).
// A state_dict is an OrderedDict that carries a `_metadata` attribute (restored with BUILD), so
// `torch::pickle_load` on the file fails with "Expected GenericDict but got None". The fix here
// rewrites the archive's pickle program, opcode by opcode, before handing it to pickle_load:
//
//   - `OrderedDict()` (GLOBAL collections.OrderedDict, or a memo fetch of it, then EMPTY_TUPLE,
//     REDUCE) becomes EMPTY_DICT, so SETITEMS fill an ordinary (insertion-ordered) dict;
//   - the final BUILD of the top-level object (its `_metadata`) becomes TUPLE2, so the program
//     returns (state_dict, {"_metadata": ...}) and the caller takes element 0;
//   - SETITEM and APPEND (one-item dicts such as `_metadata`'s {"version": 1}, and one-item
//     batches), which LibTorch 1.13 does not read, become MARK ... SETITEMS / APPENDS; where the
//     MARK goes is found by running the program's stack discipline.
//
// Tensor records are copied unchanged; only `data.pkl` differs. Files without an OrderedDict
// (a plain dict saved by torch.save or by torch::pickle_save) pass through the same path unchanged
// in meaning. Pickle protocols 0-2 are understood (torch.save's default is 2); LibTorch's unpickler
// reads only the binary opcodes of protocol 2, and an opcode it cannot read is reported by name.
#pragma once

#include <string>
#include <vector>

namespace batchlab::models {

// `pickle`: the bytes of one pickle program (an archive's data.pkl). Returns the rewritten
// program. Throws InputError (mentioning `source_name`) for a truncated program, an opcode outside
// protocol 2, or an OrderedDict used other than as `OrderedDict()`.
std::vector<char> rewrite_state_dict_pickle(const std::vector<char>& pickle,
                                            const std::string& source_name);

// `archive`: the bytes of a torch.save zip archive (the format torch.save writes by default since
// PyTorch 1.6). Returns an equivalent archive whose data.pkl went through
// rewrite_state_dict_pickle, ready for torch::pickle_load. Throws InputError naming `source_name`
// when the bytes are not such an archive.
std::vector<char> make_loadable_by_libtorch(const std::vector<char>& archive,
                                            const std::string& source_name);

}  // namespace batchlab::models
