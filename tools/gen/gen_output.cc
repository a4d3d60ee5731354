#include "tools/gen/gen_output.h"

#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "storage/base/parallel.h"
#include "storage/base/status_macros.h"
#include "tbb/task_arena.h"

namespace ember::tools::gen {
namespace {

// "12.3M" style counts for the progress line.
std::string Human(double v) {
  if (v >= 1e9) return absl::StrFormat("%.2fG", v / 1e9);
  if (v >= 1e6) return absl::StrFormat("%.1fM", v / 1e6);
  if (v >= 1e3) return absl::StrFormat("%.1fk", v / 1e3);
  return absl::StrFormat("%.0f", v);
}

}  // namespace

absl::Status GenOutputOptions::Validate() const {
  if (path.empty()) {
    return absl::InvalidArgumentError("--out: an output path is required");
  }
  if (threads < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--threads must be >= 0 (0 = all cores), got ", threads));
  }
  if (gzip_level < 1 || gzip_level > 9) {
    return absl::InvalidArgumentError(
        absl::StrCat("gzip level must be in [1, 9], got ", gzip_level));
  }
  if (!(progress_interval_s > 0)) {
    return absl::InvalidArgumentError("progress interval must be > 0 seconds");
  }
  return absl::OkStatus();
}

bool IsGzipPath(std::string_view path) {
  return path.size() >= 3 && path.substr(path.size() - 3) == ".gz";
}

absl::StatusOr<std::unique_ptr<GenOutputFile>> GenOutputFile::Create(
    const std::string& path, bool overwrite, int gzip_level) {
  ASSIGN_OR_RETURN(std::unique_ptr<AtomicOutputFile> file,
                   AtomicOutputFile::Create(path, overwrite));
  return std::unique_ptr<GenOutputFile>(
      new GenOutputFile(std::move(file), IsGzipPath(path) ? gzip_level : -1));
}

GenOutputFile::GenOutputFile(std::unique_ptr<AtomicOutputFile> file, int gzip_level)
    : file_(std::move(file)), gzip_level_(gzip_level) {}

GenOutputFile::~GenOutputFile() = default;

absl::Status GenOutputFile::Encode(std::string* chunk) const {
  if (gzip_level_ < 0) return absl::OkStatus();
  const std::string_view text = *chunk;
  std::string out;
  z_stream zs;
  std::memset(&zs, 0, sizeof(zs));
  // windowBits 15 + 16: a gzip (not zlib) wrapper; each chunk is one member.
  if (deflateInit2(&zs, gzip_level_, Z_DEFLATED, 15 + 16, 8,
                   Z_DEFAULT_STRATEGY) != Z_OK) {
    return absl::InternalError(
        absl::StrCat("deflateInit2 failed for '", path(), "'"));
  }
  out.resize(deflateBound(&zs, text.size()) + 64);
  zs.next_out = reinterpret_cast<Bytef*>(out.data());
  zs.avail_out = static_cast<uInt>(out.size());
  size_t fed = 0;
  int rc = Z_OK;
  while (rc == Z_OK) {
    if (zs.avail_in == 0 && fed < text.size()) {
      const size_t n = std::min<size_t>(text.size() - fed, 1u << 30);
      zs.next_in =
          reinterpret_cast<Bytef*>(const_cast<char*>(text.data() + fed));
      zs.avail_in = static_cast<uInt>(n);
      fed += n;
    }
    if (zs.avail_out == 0) {  // deflateBound should make this unreachable
      const size_t used = out.size();
      out.resize(used * 2);
      zs.next_out = reinterpret_cast<Bytef*>(out.data() + used);
      zs.avail_out = static_cast<uInt>(out.size() - used);
    }
    rc = deflate(&zs, fed == text.size() ? Z_FINISH : Z_NO_FLUSH);
  }
  const size_t produced = reinterpret_cast<char*>(zs.next_out) - out.data();
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) {
    return absl::InternalError(absl::StrCat("gzip compression failed for '",
                                            path(), "' (rc ", rc, ")"));
  }
  out.resize(produced);
  chunk->swap(out);
  return absl::OkStatus();
}

absl::Status GenOutputFile::Write(std::string_view bytes) {
  return file_->Append(bytes);
}

absl::Status GenOutputFile::Commit() { return file_->Commit(); }

absl::Status WriteChunksInOrder(
    uint64_t num_chunks, uint64_t total_items, const ChunkTextFn& produce,
    const std::function<uint64_t(uint64_t)>& items_per_chunk,
    const GenOutputOptions& options, std::string_view label,
    std::string_view unit, GenOutputFile* out) {
  const int threads = options.threads > 0
                          ? options.threads
                          : tbb::this_task_arena::max_concurrency();

  // One token per chunk in flight: bounds memory to ~2 chunks per thread.
  struct Token {
    uint64_t index = 0;
    std::string bytes;
    absl::Status status;
  };
  std::atomic<bool> failed{false};
  absl::Status first_error;  // written only by the serial output stage
  uint64_t next_chunk = 0;
  uint64_t items_done = 0;
  const absl::Time start = absl::Now();
  absl::Time last_report = start;

  auto report = [&](bool final_line) {
    const double secs = absl::ToDoubleSeconds(absl::Now() - start);
    std::fprintf(stderr, "%.*s: %s/%s %.*s (%s/s)%s\n",
                 static_cast<int>(label.size()), label.data(),
                 Human(static_cast<double>(items_done)).c_str(),
                 Human(static_cast<double>(total_items)).c_str(),
                 static_cast<int>(unit.size()), unit.data(),
                 Human(secs > 0 ? items_done / secs : 0).c_str(),
                 final_line ? absl::StrFormat(", %.1f s", secs).c_str() : "");
  };

  tbb::task_arena arena(threads);
  arena.execute([&] {
    ParallelPipeline(
        static_cast<size_t>(2 * threads),
        MakeStage<void, Token*>(
            StageMode::kSerialInOrder,
            [&](FlowControl& fc) -> Token* {
              if (next_chunk >= num_chunks ||
                  failed.load(std::memory_order_relaxed)) {
                fc.stop();
                return nullptr;
              }
              Token* t = new Token;
              t->index = next_chunk++;
              return t;
            }) &
            MakeStage<Token*, Token*>(StageMode::kParallel,
                                             [&](Token* t) -> Token* {
                                               produce(t->index, &t->bytes);
                                               t->status =
                                                   out->Encode(&t->bytes);
                                               return t;
                                             }) &
            MakeStage<Token*, void>(
                StageMode::kSerialInOrder, [&](Token* t) {
                  std::unique_ptr<Token> owned(t);
                  if (!first_error.ok()) return;
                  absl::Status s = t->status;
                  if (s.ok()) s = out->Write(t->bytes);
                  if (!s.ok()) {
                    first_error = s;
                    failed.store(true, std::memory_order_relaxed);
                    return;
                  }
                  items_done += items_per_chunk(t->index);
                  if (options.progress &&
                      absl::ToDoubleSeconds(absl::Now() - last_report) >=
                          options.progress_interval_s) {
                    last_report = absl::Now();
                    report(false);
                  }
                }));
  });
  if (first_error.ok() && options.progress) report(true);
  return first_error;
}

}  // namespace ember::tools::gen
