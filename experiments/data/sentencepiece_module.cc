// libbatchlab_sentencepiece.so: the only code that links libsentencepiece (see
// sentencepiece_backend.h for why it is a module loaded with dlopen).
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>

#include <fstream>
#include <unordered_map>

#include "experiments/data/sentencepiece_backend.h"

namespace batchlab::data {
namespace {

// Feeds SentencePiece the non-empty lines of the files in order; a file that cannot be read is
// reported through status().
class FileLineIterator : public sentencepiece::SentenceIterator {
 public:
  explicit FileLineIterator(const std::vector<std::string>& files) : files_(files) { Next(); }

  bool done() const override { return done_; }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }

  void Next() override {
    while (true) {
      if (in_.is_open() && std::getline(in_, line_)) {
        if (!line_.empty() && line_.back() == '\r') line_.pop_back();
        if (line_.find_first_not_of(" \t\f\v") != std::string::npos) return;
        continue;
      }
      if (in_.is_open()) {
        if (in_.bad()) return fail(files_[next_ - 1] + ": read error");
        in_.close();
      }
      if (next_ == files_.size()) {
        done_ = true;
        return;
      }
      in_.clear();
      in_.open(files_[next_++], std::ios::binary);
      if (!in_) return fail(files_[next_ - 1] + ": cannot open");
    }
  }

 private:
  void fail(const std::string& message) {
    status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound, message);
    done_ = true;
  }

  const std::vector<std::string>& files_;
  size_t next_ = 0;
  std::ifstream in_;
  std::string line_;
  bool done_ = false;
  sentencepiece::util::Status status_;
};

std::string message(const sentencepiece::util::Status& s) {
  return s.ok() ? std::string() : std::string(s.error_message());
}

class Backend : public SentencePieceBackend {
 public:
  std::string train(const std::map<std::string, std::string>& args,
                    const std::vector<std::string>& files, uint32_t seed) override {
    const std::unordered_map<std::string, std::string> kwargs(args.begin(), args.end());
    FileLineIterator lines(files);
    sentencepiece::SetRandomGeneratorSeed(seed);
    return message(sentencepiece::SentencePieceTrainer::Train(kwargs, &lines));
  }
  std::string load(const std::string& model_path) override { return message(sp_.Load(model_path)); }
  std::string encode(std::string_view text, std::vector<int>* ids) const override {
    return message(sp_.Encode(text, ids));
  }
  std::string decode(const std::vector<int>& ids, std::string* text) const override {
    return message(sp_.Decode(ids, text));
  }
  int piece_size() const override { return sp_.GetPieceSize(); }
  int piece_to_id(const std::string& piece) const override { return sp_.PieceToId(piece); }
  std::string id_to_piece(int id) const override { return sp_.IdToPiece(id); }

 private:
  sentencepiece::SentencePieceProcessor sp_;
};

}  // namespace
}  // namespace batchlab::data

extern "C" __attribute__((visibility("default"))) batchlab::data::SentencePieceBackend*
batchlab_sentencepiece_create() {
  return new batchlab::data::Backend();
}
