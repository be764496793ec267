#include "models/safetensors.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <torch/types.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>

#include "core/errors.h"
#include "models/bounded_json.h"

namespace batchlab::models {
namespace {

// The package refuses headers over 100 MB; a larger length is a damaged or foreign file, and
// checking it first keeps a garbage length from allocating gigabytes.
constexpr uint64_t kMaxHeaderBytes = uint64_t{100} << 20;
constexpr const char* kExpected =
    "expected a file written by safetensors.torch.save_file or save_pretrained";

struct SafetensorsDtype {
  const char* name;
  torch::ScalarType type;
  uint64_t bytes;
};
constexpr SafetensorsDtype kDtypes[] = {
    {"F32", torch::kFloat, 4},  {"F16", torch::kHalf, 2}, {"BF16", torch::kBFloat16, 2},
    {"F64", torch::kDouble, 8}, {"I64", torch::kLong, 8}, {"I32", torch::kInt, 4},
    {"I16", torch::kShort, 2},  {"I8", torch::kChar, 1},  {"U8", torch::kByte, 1},
    {"BOOL", torch::kBool, 1},
};

std::optional<SafetensorsDtype> dtype_named(const std::string& name) {
  for (const auto& d : kDtypes) {
    if (name == d.name) return d;
  }
  return std::nullopt;
}

std::optional<SafetensorsDtype> dtype_of(torch::ScalarType type) {
  for (const auto& d : kDtypes) {
    if (type == d.type) return d;
  }
  return std::nullopt;
}

std::string known_dtypes() {
  std::vector<std::string> names;
  for (const auto& d : kDtypes) names.emplace_back(d.name);
  return fmt::format("{}", fmt::join(names, ", "));
}

// One header entry, checked on its own.
struct HeaderEntry {
  std::string name;
  SafetensorsDtype dtype;
  std::vector<int64_t> shape;
  uint64_t begin = 0;
  uint64_t end = 0;
};

[[noreturn]] void malformed(const std::string& path, const std::string& why) {
  throw InputError(fmt::format("{}: not a valid safetensors file: {} ({})", path, why, kExpected));
}

std::vector<int64_t> header_shape(const std::string& path, const std::string& name,
                                  const nlohmann::json& shape) {
  if (!shape.is_array()) malformed(path, fmt::format("tensor {}: \"shape\" is not a list", name));
  std::vector<int64_t> out;
  for (const auto& d : shape) {
    if (!d.is_number_unsigned() || d.get<uint64_t>() > uint64_t{INT64_MAX}) {
      malformed(path, fmt::format("tensor {}: shape {} holds a value that is no size", name,
                                  json_excerpt(shape)));
    }
    out.push_back(d.get<int64_t>());
  }
  return out;
}

HeaderEntry entry_of(const std::string& path, const std::string& name, const nlohmann::json& value,
                     uint64_t buffer_bytes) {
  if (!value.is_object() || !value.contains("dtype") || !value.contains("shape") ||
      !value.contains("data_offsets")) {
    malformed(path, fmt::format(
                        "tensor {}: expected an object with dtype, shape and data_offsets, got {}",
                        name, json_excerpt(value)));
  }
  HeaderEntry e;
  e.name = name;
  const auto& dtype = value["dtype"];
  const std::string dtype_name = dtype.is_string() ? dtype.get<std::string>() : json_excerpt(dtype);
  const auto known = dtype_named(dtype_name);
  if (!known) {
    malformed(path, fmt::format("tensor {}: unknown dtype {} (batchlab reads {})", name, dtype_name,
                                known_dtypes()));
  }
  e.dtype = *known;
  e.shape = header_shape(path, name, value["shape"]);
  const auto& offsets = value["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2 || !offsets[0].is_number_unsigned() ||
      !offsets[1].is_number_unsigned()) {
    malformed(path, fmt::format("tensor {}: data_offsets {} is not [begin, end]", name,
                                json_excerpt(offsets)));
  }
  e.begin = offsets[0].get<uint64_t>();
  e.end = offsets[1].get<uint64_t>();
  if (e.begin > e.end || e.end > buffer_bytes) {
    malformed(path, fmt::format("tensor {}: data_offsets [{}, {}] out of range: the data after the "
                                "header holds {} bytes (a truncated file, or a wrong header)",
                                name, e.begin, e.end, buffer_bytes));
  }
  uint64_t bytes = e.dtype.bytes;
  for (const int64_t d : e.shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes)) {
      malformed(path,
                fmt::format("tensor {}: shape [{}] is too large", name, fmt::join(e.shape, ", ")));
    }
  }
  if (e.end - e.begin != bytes) {
    malformed(path,
              fmt::format("tensor {}: data_offsets [{}, {}] span {} bytes, but shape [{}] of {} "
                          "needs {}",
                          name, e.begin, e.end, e.end - e.begin, fmt::join(e.shape, ", "),
                          e.dtype.name, bytes));
  }
  return e;
}

// The package's rule: sorted by offset, every tensor starts where the previous one ended and the
// last ends at the end of the file. Anything else is a damaged file (or one that hides data).
void check_layout(const std::string& path, std::vector<const HeaderEntry*> order,
                  uint64_t buffer_bytes) {
  std::sort(order.begin(), order.end(), [](const HeaderEntry* a, const HeaderEntry* b) {
    return std::tie(a->begin, a->end) < std::tie(b->begin, b->end);
  });
  uint64_t covered = 0;
  const HeaderEntry* previous = nullptr;
  for (const HeaderEntry* e : order) {
    if (e->begin < covered) {
      malformed(path, fmt::format("tensors {} [{}, {}] and {} [{}, {}] overlap", previous->name,
                                  previous->begin, previous->end, e->name, e->begin, e->end));
    }
    if (e->begin > covered) {
      malformed(path, fmt::format("bytes [{}, {}) of the data belong to no tensor (before {})",
                                  covered, e->begin, e->name));
    }
    covered = e->end;
    previous = e;
  }
  if (covered != buffer_bytes) {
    malformed(path,
              fmt::format("the data after the header holds {} bytes, the tensors cover {}: the "
                          "last {} belong to no tensor",
                          buffer_bytes, covered, buffer_bytes - covered));
  }
}

uint64_t little_endian_u64(const unsigned char* b) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

void append_u64(std::vector<char>& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

bool is_safetensors_path(const std::string& path) {
  return std::filesystem::path(path).extension() == ".safetensors";
}

SafetensorsFile read_safetensors(const std::string& path) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  std::ifstream in(path, std::ios::binary);
  if (ec || !in)
    throw InputError(fmt::format("{}: cannot be read: {}", path, std::strerror(errno)));
  unsigned char length[8];
  if (size < 8 || !in.read(reinterpret_cast<char*>(length), 8)) {
    malformed(path, fmt::format("{} bytes, shorter than the 8-byte header length", size));
  }
  const uint64_t header_bytes = little_endian_u64(length);
  if (header_bytes > kMaxHeaderBytes || header_bytes > size - 8) {
    malformed(path,
              fmt::format(
                  "header length {} runs past the end of the file ({} bytes){}", header_bytes, size,
                  header_bytes > kMaxHeaderBytes ? " and over the format's 100 MB limit" : ""));
  }
  std::string header(header_bytes, '\0');
  in.read(header.data(), static_cast<std::streamsize>(header_bytes));
  if (!in) malformed(path, "the header cannot be read");
  // Depth and size are bounded before the parse (models/bounded_json.h): a hostile header must
  // not take the stack or gigabytes of memory.
  const auto parsed = parse_bounded_json(header, path, "safetensors header");
  if (!parsed || !parsed->is_object()) {
    malformed(path,
              fmt::format("the {}-byte header is not a JSON object (a wrong header length, or not "
                          "a safetensors file at all)",
                          header_bytes));
  }
  const uint64_t buffer_bytes = size - 8 - header_bytes;
  SafetensorsFile out;
  std::vector<HeaderEntry> entries;
  for (const auto& [name, value] : parsed->items()) {
    if (name == "__metadata__") {
      if (!value.is_object()) malformed(path, "__metadata__ is not an object");
      for (const auto& [key, text] : value.items()) {
        if (!text.is_string()) malformed(path, fmt::format("__metadata__.{} is not a string", key));
        out.metadata[key] = text.get<std::string>();
      }
      continue;
    }
    entries.push_back(entry_of(path, name, value, buffer_bytes));
  }
  std::vector<const HeaderEntry*> order;
  for (const auto& e : entries) order.push_back(&e);
  check_layout(path, order, buffer_bytes);

  // Only now, with every offset known to be sound, are tensors allocated and filled. nlohmann's
  // object is sorted by name; the file's own order is the offsets' (the writer's order).
  std::sort(entries.begin(), entries.end(),
            [](const HeaderEntry& a, const HeaderEntry& b) { return a.begin < b.begin; });
  for (const auto& e : entries) {
    auto tensor = torch::empty(e.shape, torch::TensorOptions().dtype(e.dtype.type));
    in.seekg(static_cast<std::streamoff>(8 + header_bytes + e.begin));
    in.read(static_cast<char*>(tensor.data_ptr()), static_cast<std::streamsize>(e.end - e.begin));
    if (!in) throw InputError(fmt::format("{}: read error in tensor {}", path, e.name));
    out.tensors.emplace_back(e.name, std::move(tensor));
  }
  return out;
}

std::vector<char> safetensors_bytes(const StateDict& entries,
                                    const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::vector<torch::Tensor> data;
  uint64_t offset = 0;
  for (const auto& [name, value] : entries) {
    const auto dtype = dtype_of(value.scalar_type());
    if (!dtype) {
      throw Error(fmt::format("{}: dtype {} has no safetensors name batchlab writes", name,
                              c10::toString(value.scalar_type())));
    }
    auto tensor = value.detach().to(torch::kCPU).contiguous();
    const uint64_t bytes = static_cast<uint64_t>(tensor.numel()) * dtype->bytes;
    header[name] = {{"dtype", dtype->name},
                    {"shape", tensor.sizes().vec()},
                    {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
    data.push_back(std::move(tensor));
  }
  std::string text = header.dump();
  // Padded with spaces to a multiple of 8, as the package pads it, so every tensor's data starts
  // 8-byte aligned when the file is memory-mapped.
  text.append((8 - text.size() % 8) % 8, ' ');
  std::vector<char> out;
  out.reserve(8 + text.size() + offset);
  append_u64(out, text.size());
  out.insert(out.end(), text.begin(), text.end());
  for (const auto& t : data) {
    const char* p = static_cast<const char*>(t.data_ptr());
    out.insert(out.end(), p, p + t.numel() * static_cast<int64_t>(t.element_size()));
  }
  return out;
}

StateDict read_weights_file(const std::string& path) {
  if (is_safetensors_path(path)) return read_safetensors(path).tensors;
  return read_state_dict(path);
}

}  // namespace batchlab::models
