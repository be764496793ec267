// An image folder dataset (data.path = ROOT with train/<class>/*.JPEG, val/<class>/*.JPEG;
// experiments/data/image_folder.h): the folder tree is scanned, then every image is opened and
// decoded as training would. The input is the tree, one relative path a line (a folder ends in
// '/'), then an empty line, then the bytes every listed file holds (a JPEG). Paths that would leave
// the scratch folder ("..", absolute) are skipped, and at most 32 lines are taken.
#include <filesystem>
#include <string>
#include <string_view>

#include "experiments/data/image_folder.h"
#include "fuzz/fuzz_support.h"

namespace {

namespace fs = std::filesystem;

bool stays_inside(const fs::path& relative) {
  if (relative.empty() || relative.is_absolute()) return false;
  for (const auto& part : relative) {
    if (part == "..") return false;
  }
  return true;
}

// Makes the tree the input's header lists under `root`; returns the file bytes after it.
std::string_view make_tree(std::string_view text, const fs::path& root) {
  const size_t end = text.find("\n\n");
  const std::string_view listing = text.substr(0, end);
  const std::string_view body = end == std::string_view::npos ? "" : text.substr(end + 2);
  size_t at = 0;
  for (int line = 0; line < 32 && at < listing.size(); ++line) {
    const size_t stop = std::min(listing.find('\n', at), listing.size());
    const std::string entry(listing.substr(at, stop - at));
    at = stop + 1;
    if (entry.find('\0') != std::string::npos || !stays_inside(entry)) continue;
    std::error_code ec;
    if (entry.back() == '/') {
      fs::create_directories(root / entry, ec);
    } else {
      fs::create_directories((root / entry).parent_path(), ec);
      std::ofstream(root / entry, std::ios::binary)
          .write(body.data(), static_cast<std::streamsize>(body.size()));
    }
  }
  return body;
}

void read_every_image(const batchlab::data::FolderImageSource& source) {
  using batchlab::data::Split;
  auto reader = source.make_reader();
  for (const Split split : {Split::train, Split::test}) {
    for (int64_t i = 0; i < source.size(split); ++i) {
      const auto header = reader->open(split, i);
      const batchlab::data::CropBox box{0.0, 0.0, static_cast<double>(header.width),
                                        static_cast<double>(header.height)};
      reader->pixels(box, 8, 8);
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace batchlab;
  const fs::path root = fuzz::scratch_dir() / "images";
  std::error_code ec;
  fs::remove_all(root, ec);
  fs::create_directories(root);
  make_tree(fuzz::as_text(data, size), root);
  fuzz::refuse_only_as_input_error([&] {
    const data::FolderImageSource source(data::scan_image_folder(root.string()));
    read_every_image(source);
  });
  return 0;
}
