#include "tools/cli/recommend_output.h"

#include <bit>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "storage/base/atomic_file.h"
#include "storage/base/status_macros.h"

namespace ember::tools {
namespace {

static_assert(std::endian::native == std::endian::little,
              "the npy writer assumes a little-endian host");

// Text written to a file atomically, or to standard output for "-".
class TextSink {
 public:
  static absl::StatusOr<TextSink> Open(const std::string& path, bool overwrite) {
    TextSink sink;
    if (path != "-") {
      ASSIGN_OR_RETURN(sink.file_, AtomicOutputFile::Create(path, overwrite));
    }
    return sink;
  }
  absl::Status Append(std::string_view data) {
    if (file_ != nullptr) return file_->Append(data);
    if (std::fwrite(data.data(), 1, data.size(), stdout) != data.size()) {
      return absl::ErrnoToStatus(errno, "writing recommendations to standard output");
    }
    return absl::OkStatus();
  }
  absl::Status Commit() {
    if (file_ != nullptr) return file_->Commit();
    if (std::fflush(stdout) != 0) {
      return absl::ErrnoToStatus(errno, "writing recommendations to standard output");
    }
    return absl::OkStatus();
  }

 private:
  std::unique_ptr<AtomicOutputFile> file_;  // null: standard output
};

// tsv and jsonl: a line (or lines) a user, through a buffer of about 1 MiB.
class LineOutput : public RecommendOutput {
 public:
  LineOutput(const RecommendOutputOptions& options, TextSink sink)
      : options_(options), sink_(std::move(sink)) {}

  absl::Status Add(const std::string& user, std::span<const Scored> top) override {
    const std::vector<std::string>& items = *options_.item_names;
    if (options_.format == RecommendFormat::kTsv) {
      for (size_t i = 0; i < top.size(); ++i) {
        absl::StrAppendFormat(&buffer_, "%s\t%s\t%.6g\t%d\n", user,
                              items[top[i].id - options_.first_item], top[i].score, i + 1);
      }
    } else {
      nlohmann::ordered_json j = {
          {"user", user}, {"items", nlohmann::json::array()}, {"scores", nlohmann::json::array()}};
      for (const Scored& s : top) {
        j["items"].push_back(items[s.id - options_.first_item]);
        j["scores"].push_back(s.score);
      }
      // Names are bytes as imported: invalid UTF-8 becomes U+FFFD.
      absl::StrAppend(&buffer_, j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                      "\n");
    }
    if (buffer_.size() >= (1 << 20)) {
      RETURN_IF_ERROR(sink_.Append(buffer_));
      buffer_.clear();
    }
    return absl::OkStatus();
  }

  absl::Status Commit() override {
    RETURN_IF_ERROR(sink_.Append(buffer_));
    buffer_.clear();
    return sink_.Commit();
  }

 private:
  const RecommendOutputOptions options_;
  TextSink sink_;
  std::string buffer_;
};

// NumPy format 1.0: magic, version, header length, a dict padded so that
// the data starts at a multiple of 64.
std::string NpyHeader(const char* descr, uint64_t rows, uint32_t cols) {
  std::string dict = absl::StrFormat("{'descr': '%s', 'fortran_order': False, 'shape': (%d, %d), }",
                                     descr, rows, cols);
  const size_t unpadded = 10 + dict.size() + 1;
  dict.append((unpadded + 63) / 64 * 64 - unpadded, ' ');
  dict.push_back('\n');
  std::string h("\x93NUMPY\x01\x00", 8);
  h.push_back(static_cast<char>(dict.size() & 0xff));
  h.push_back(static_cast<char>(dict.size() >> 8));
  return h + dict;
}

class NpyOutput : public RecommendOutput {
 public:
  static absl::StatusOr<std::unique_ptr<RecommendOutput>> Create(
      const RecommendOutputOptions& options) {
    std::unique_ptr<NpyOutput> out(new NpyOutput(options));
    const std::string& p = options.path;
    ASSIGN_OR_RETURN(out->ids_, AtomicOutputFile::Create(p + ".ids.npy", options.overwrite));
    ASSIGN_OR_RETURN(out->scores_, AtomicOutputFile::Create(p + ".scores.npy", options.overwrite));
    ASSIGN_OR_RETURN(out->users_, AtomicOutputFile::Create(p + ".users.tsv", options.overwrite));
    ASSIGN_OR_RETURN(out->items_, AtomicOutputFile::Create(p + ".items.tsv", options.overwrite));
    RETURN_IF_ERROR(out->ids_->Append(NpyHeader("<i8", options.rows, options.width)));
    RETURN_IF_ERROR(out->scores_->Append(NpyHeader("<f4", options.rows, options.width)));
    return out;
  }

  absl::Status Add(const std::string& user, std::span<const Scored> top) override {
    if (top.size() > options_.width) {
      return absl::InternalError(absl::StrCat("recommend: ", top.size(), " items for '", user,
                                              "', more than the arrays' ", options_.width));
    }
    ids_row_.assign(options_.width, -1);
    scores_row_.assign(options_.width, std::numeric_limits<float>::quiet_NaN());
    for (size_t i = 0; i < top.size(); ++i) {
      ids_row_[i] = static_cast<int64_t>(top[i].id - options_.first_item);
      scores_row_[i] = top[i].score;
    }
    RETURN_IF_ERROR(ids_->Append(std::string_view(reinterpret_cast<const char*>(ids_row_.data()),
                                                  ids_row_.size() * sizeof(int64_t))));
    RETURN_IF_ERROR(scores_->Append(std::string_view(
        reinterpret_cast<const char*>(scores_row_.data()), scores_row_.size() * sizeof(float))));
    RETURN_IF_ERROR(users_->Append(absl::StrCat(user, "\n")));
    ++added_;
    return absl::OkStatus();
  }

  absl::Status Commit() override {
    if (added_ != options_.rows) {
      return absl::FailedPreconditionError(absl::StrCat("recommend: ", added_, " users written to ",
                                                        options_.path, ".ids.npy, not the ",
                                                        options_.rows, " its header promises"));
    }
    std::string names;
    for (const std::string& n : *options_.item_names) absl::StrAppend(&names, n, "\n");
    RETURN_IF_ERROR(items_->Append(names));
    for (AtomicOutputFile* f : {items_.get(), users_.get(), scores_.get(), ids_.get()}) {
      RETURN_IF_ERROR(f->Close());
    }
    for (AtomicOutputFile* f : {items_.get(), users_.get(), scores_.get(), ids_.get()}) {
      RETURN_IF_ERROR(f->Commit());
    }
    return absl::OkStatus();
  }

 private:
  explicit NpyOutput(const RecommendOutputOptions& options) : options_(options) {}
  const RecommendOutputOptions options_;
  std::unique_ptr<AtomicOutputFile> ids_, scores_, users_, items_;
  std::vector<int64_t> ids_row_;
  std::vector<float> scores_row_;
  uint64_t added_ = 0;
};

}  // namespace

absl::Status RecommendOutputOptions::Validate() const {
  if (path.empty()) return absl::InvalidArgumentError("recommend: --out is required");
  if (format == RecommendFormat::kNpy && path == "-") {
    return absl::InvalidArgumentError(
        "--out-format npy writes four files (OUT.ids.npy, OUT.scores.npy, OUT.users.tsv, "
        "OUT.items.tsv): --out takes their path prefix, not '-'");
  }
  if (item_names == nullptr) return absl::InvalidArgumentError("recommend: no item names");
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<RecommendOutput>> RecommendOutput::Create(
    const RecommendOutputOptions& options) {
  RETURN_IF_ERROR(options.Validate());
  if (options.format == RecommendFormat::kNpy) return NpyOutput::Create(options);
  ASSIGN_OR_RETURN(TextSink sink, TextSink::Open(options.path, options.overwrite));
  return std::unique_ptr<RecommendOutput>(new LineOutput(options, std::move(sink)));
}

}  // namespace ember::tools
