// NVRTC compilation with a content-addressed cubin cache.
//
// A cache entry is <key>.cubin, <key>.log and <key>.sum (the cubin's size and SHA-256), each written
// to a temporary file, fsync'd and renamed into place, the .sum last, so concurrent compiles of the
// same key never see half a file. A hit is used only when the cubin matches its .sum; an entry
// without one, or whose cubin differs (truncated by a full disk, edited, written by an older
// version), is discarded and compiled again, and the result's log says so.
#include "codegen/nvrtc_compiler.h"

#include <nvrtc.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <thread>

#include "codegen/embedded_kernels.h"
#include "support/durable_files.h"
#include "support/sha256.h"

#ifndef AC_CUDA_INCLUDE_DIR
#define AC_CUDA_INCLUDE_DIR ""
#endif

namespace agentcompile::codegen {

namespace fs = std::filesystem;

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

Expected<fs::path> cuda_include_dir() {
  std::vector<fs::path> candidates;
  if (std::string(AC_CUDA_INCLUDE_DIR).size()) candidates.emplace_back(AC_CUDA_INCLUDE_DIR);
  if (const char* home = std::getenv("CUDA_HOME")) candidates.emplace_back(fs::path(home) / "include");
  candidates.emplace_back("/usr/local/cuda/include");
  for (const auto& dir : candidates)
    if (fs::exists(dir / "cuda_fp16.h")) return dir;
  return error(ErrorCode::kNotFound, "cannot find cuda_fp16.h: looked in the build's toolkit, $CUDA_HOME/include and /usr/local/cuda/include");
}

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

std::string checksum_line(const std::string& bytes) { return std::to_string(bytes.size()) + " " + support::sha256_hex(bytes) + "\n"; }

// The cached cubin of `key` when its entry is intact. A damaged entry is removed and `note` says why.
std::optional<std::string> read_cached_cubin(const fs::path& dir, const std::string& key, std::string* note) {
  const fs::path cubin = dir / (key + ".cubin"), sum = dir / (key + ".sum");
  std::error_code ec;
  if (!fs::exists(cubin, ec) && !fs::exists(sum, ec)) return std::nullopt;
  auto bytes = support::read_file_bytes(cubin);
  auto recorded = support::read_file_bytes(sum);
  std::string why;
  if (!bytes) why = "the cubin is missing";
  else if (!recorded) why = "it has no checksum";
  else if (*recorded != checksum_line(*bytes)) why = "the cubin (" + std::to_string(bytes->size()) + " bytes) does not match its checksum";
  if (why.empty()) return std::move(*bytes);
  *note = "discarded the damaged NVRTC cache entry " + cubin.string() + " (" + why + ") and compiled again\n";
  fs::remove(sum, ec);
  fs::remove(cubin, ec);
  return std::nullopt;
}

// Best effort: a cache entry that cannot be written is compiled again next time.
void store_cached_cubin(const fs::path& dir, const std::string& key, const std::string& cubin, const std::string& log) {
  if (!support::replace_file_atomically(dir / (key + ".log"), log)) return;
  if (!support::replace_file_atomically(dir / (key + ".cubin"), cubin)) return;
  (void)support::replace_file_atomically(dir / (key + ".sum"), checksum_line(cubin));
}

std::vector<std::string> compile_flags(const NvrtcOptions& options, const fs::path& include_dir) {
  std::vector<std::string> flags = {"--gpu-architecture=" + options.arch, "-std=c++17", "--use_fast_math",
                                    "-default-device", "-I" + include_dir.string()};
  flags.insert(flags.end(), options.extra_options.begin(), options.extra_options.end());
  return flags;
}

CompileResult compile_one(const CompileJob& job, const NvrtcOptions& options, const std::vector<std::string>& flags,
                          const std::string& headers_digest) {
  const auto start = std::chrono::steady_clock::now();
  CompileResult result;
  result.kernel = job.kernel;
  support::Sha256 key;
  key.update(job.source).update("\0", 1).update(headers_digest).update(nvrtc_version());
  for (const auto& flag : flags)
    if (flag.rfind("-I", 0) != 0) key.update(flag).update("\0", 1);  // include paths do not change the output
  result.key = key.hex();

  std::string cache_note;
  if (!options.cache_dir.empty()) {
    if (auto bytes = read_cached_cubin(options.cache_dir, result.key, &cache_note); bytes && !bytes->empty()) {
      result.cubin.assign(bytes->begin(), bytes->end());
      result.log = read_file(options.cache_dir / (result.key + ".log"));
      result.ok = true;
      result.cache_hit = true;
      result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      return result;
    }
  }

  const auto& headers = embedded_kernel_headers();
  std::vector<const char*> header_texts, header_names;
  for (const auto& header : headers) {
    header_texts.push_back(header.text.c_str());
    header_names.push_back(header.name.c_str());
  }
  nvrtcProgram program;
  nvrtcResult status = nvrtcCreateProgram(&program, job.source.c_str(), (job.kernel + ".cu").c_str(),
                                          static_cast<int>(headers.size()), header_texts.data(), header_names.data());
  if (status != NVRTC_SUCCESS) {
    result.log = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(status);
    return result;
  }
  std::vector<const char*> flag_ptrs;
  for (const auto& flag : flags) flag_ptrs.push_back(flag.c_str());
  status = nvrtcCompileProgram(program, static_cast<int>(flag_ptrs.size()), flag_ptrs.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(program, &log_size);
  std::string log(log_size, '\0');
  if (log_size) nvrtcGetProgramLog(program, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  result.log = cache_note + log;
  if (status == NVRTC_SUCCESS) {
    size_t cubin_size = 0;
    nvrtcGetCUBINSize(program, &cubin_size);
    result.cubin.resize(cubin_size);
    if (cubin_size) nvrtcGetCUBIN(program, result.cubin.data());
    result.ok = cubin_size > 0;
    if (!result.ok) result.log += "\nNVRTC produced no cubin (is the arch a real sm_XX target?)";
  }
  nvrtcDestroyProgram(&program);
  if (result.ok && !options.cache_dir.empty())
    store_cached_cubin(options.cache_dir, result.key, std::string(result.cubin.begin(), result.cubin.end()), log);
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

namespace {

// Compiles in a forked child that writes every result into a scratch directory, so this process
// never initializes CUDA (see NvrtcOptions::isolate).
Expected<std::vector<CompileResult>> compile_isolated(const std::vector<CompileJob>& jobs, const NvrtcOptions& options) {
  char pattern[] = "/tmp/agentcompile-nvrtc-XXXXXX";
  const char* scratch_dir = mkdtemp(pattern);
  if (!scratch_dir) return error(ErrorCode::kIo, "cannot create a scratch directory for NVRTC results");
  const fs::path scratch(scratch_dir);
  const pid_t pid = fork();
  if (pid < 0) return error(ErrorCode::kIo, "fork() for NVRTC failed");
  if (pid == 0) {
    NvrtcOptions inner = options;
    inner.isolate = false;
    auto results = compile_all(jobs, inner);
    if (!results) {
      std::ofstream(scratch / "error") << results.status().to_string();
      _exit(1);
    }
    for (size_t i = 0; i < results->size(); ++i) {
      const CompileResult& r = (*results)[i];
      const std::string stem = (scratch / std::to_string(i)).string();
      std::ofstream(stem + ".meta") << (r.ok ? 1 : 0) << " " << (r.cache_hit ? 1 : 0) << " " << r.seconds << " " << r.key;
      std::ofstream(stem + ".log") << r.log;
      std::ofstream(stem + ".cubin", std::ios::binary).write(r.cubin.data(), static_cast<std::streamsize>(r.cubin.size()));
    }
    _exit(0);
  }
  int wstatus = 0;
  waitpid(pid, &wstatus, 0);
  std::vector<CompileResult> results(jobs.size());
  Status status = Status::ok();
  if (fs::exists(scratch / "error")) {
    status = error(ErrorCode::kUnsupported, read_file(scratch / "error"));
  } else if (!WIFEXITED(wstatus) || WEXITSTATUS(wstatus) != 0) {
    status = error(ErrorCode::kInternal, "the NVRTC compile process died");
  } else {
    for (size_t i = 0; i < jobs.size(); ++i) {
      const std::string stem = (scratch / std::to_string(i)).string();
      CompileResult& r = results[i];
      r.kernel = jobs[i].kernel;
      int ok = 0, hit = 0;
      std::ifstream(stem + ".meta") >> ok >> hit >> r.seconds >> r.key;
      r.ok = ok != 0;
      r.cache_hit = hit != 0;
      r.log = read_file(stem + ".log");
      const std::string cubin = read_file(stem + ".cubin");
      r.cubin.assign(cubin.begin(), cubin.end());
    }
  }
  std::error_code ignored;
  fs::remove_all(scratch, ignored);
  if (!status) return status;
  return results;
}

}  // namespace

Expected<std::vector<CompileResult>> compile_all(const std::vector<CompileJob>& jobs, const NvrtcOptions& options) {
  if (options.isolate) return compile_isolated(jobs, options);
  fs::path include_dir = options.cuda_include_dir;
  if (include_dir.empty()) {
    AC_ASSIGN_OR_RETURN(include_dir, cuda_include_dir());
  }
  if (!options.cache_dir.empty()) {
    std::error_code ec;
    fs::create_directories(options.cache_dir, ec);
    if (ec) return error(ErrorCode::kIo, options.cache_dir.string() + ": cannot create the NVRTC cache: " + ec.message());
  }
  support::Sha256 digest;
  for (const auto& header : embedded_kernel_headers()) digest.update(header.name).update(header.text);
  const std::string headers_digest = digest.hex();
  const std::vector<std::string> flags = compile_flags(options, include_dir);

  std::vector<CompileResult> results(jobs.size());
  std::atomic<size_t> next{0};
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const size_t workers = std::min<size_t>(jobs.size(), options.threads > 0 ? static_cast<size_t>(options.threads) : hw);
  std::vector<std::thread> pool;
  for (size_t w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      for (size_t i = next++; i < jobs.size(); i = next++) results[i] = compile_one(jobs[i], options, flags, headers_digest);
    });
  for (auto& thread : pool) thread.join();
  return results;
}

}  // namespace agentcompile::codegen
