// A torch.save state_dict (model.init_from = "x.pt"): the input is the archive's data.pkl, wrapped
// in a zip as torch.save lays it out, then read as batchlab reads any .pt file
// (models/state_dict.h: the pickle rewrite of models/state_dict_pickle.h, then LibTorch's
// unpickler). Tensor records the program refers to are absent, so a program that gets that far
// is refused by LibTorch as an InputError.
#include <caffe2/serialize/inline_container.h>

#include "fuzz/fuzz_support.h"
#include "models/state_dict.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  std::string archive;
  {
    caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* p, size_t n) -> size_t {
      archive.append(static_cast<const char*>(p), n);
      return n;
    });
    writer.writeRecord("data.pkl", data, size);
    writer.writeEndOfFile();
  }
  const std::string path = fuzz::write_file("input.pt", archive);
  fuzz::refuse_only_as_input_error([&] { models::read_state_dict(path); });
  return 0;
}
