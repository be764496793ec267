// Bounds on what a checkpoint's pickle programs make LibTorch allocate, checked before LibTorch
// reads the archive (core/train/checkpoint.h, open_archive).
//
// Why: a checkpoint sits in a run folder, often on a shared filesystem, and is read by a later
// process, so its contents are input even when its checksum holds (the checksum is the writer's,
// and anyone can write both). LibTorch's unpickler believes what the archive's data.pkl (and
// constants.pkl) declare: a 5.7 KB checkpoint whose data.pkl claims an 890 MB string made it
// allocate 1.5 GB before it found the record too short (found by fuzz/checkpoint_fuzz.cpp); a PUT
// to memo slot 2^32 - 1 grows its memo table to that many values; a storage's element count is
// taken as its size although only the record's bytes exist behind it, and a tensor's sizes and
// strides are not checked against its storage, so the copy into the model would read past the
// record. Before any of that, no record may claim more bytes than the archive holds (LibTorch
// allocates a record's claimed size before reading it), and every pickle record of the archive
// (`*.pkl`, and the TorchScript source's `*.debug_pkl` tables, which LibTorch unpickles to point at
// a line of source that does not compile) is split and walked here:
//
//   - every argument and length inside the record (core/pickle_program.h);
//   - objects at most kMaxPickleDepth deep and none holding itself (core/pickle_nesting.h);
//   - memo slots at most the program's number of instructions (LibTorch's pickler numbers them
//     0, 1, 2, ...);
//   - at most kMaxContainerItems items built into one object by one instruction;
//   - a storage (BINPERSID ('storage', type, key, location, numel)) no larger than its record
//     (`<pickle name without .pkl>/<key>`), and a tensor (_rebuild_tensor_v2) with no negative
//     size, stride or offset and no element past its storage's end.
//
// The TorchScript source under code/, which LibTorch compiles, is bounded too
// (core/train/checkpoint_code.h).
//
// A program that breaks one of these is refused as a CheckpointError naming the file, the record
// and the reason (exit 2), like every other unreadable checkpoint.
#pragma once

#include <cstddef>
#include <string>

namespace batchlab::train {

inline constexpr size_t kMaxContainerItems = 1'000'000;

// `payload`: the LibTorch archive inside a checkpoint file whose checksum held; `path` names the
// file in messages. Returns when every pickle record is within the bounds above, or when the
// payload is no archive at all (LibTorch's own reader reports that). Throws CheckpointError.
void check_checkpoint_pickles(const std::string& payload, const std::string& path);

}  // namespace batchlab::train
