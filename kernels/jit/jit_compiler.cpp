#include "kernels/jit/jit_compiler.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "base/embedded_file.hpp"
#include "base/sha256.hpp"
#include "kernels/jit/nvrtc_api.hpp"

namespace attn {

// Every device-side header, embedded by CMake (kernels/CMakeLists.txt).
extern const EmbeddedFile kKernelHeaders[];
extern const size_t kKernelHeaders_count;

namespace fs = std::filesystem;

namespace {

constexpr char kCacheMagic[] = "ATTNJIT1\n";

std::string first_lines(const std::string& text, int lines) {
  std::istringstream in(text);
  std::string line, out;
  for (int i = 0; i < lines && std::getline(in, line); ++i) out += (i ? "\n    " : "    ") + line;
  return out;
}

// A name for a temporary file that no other thread or process writes.
std::string unique_suffix() {
  std::ostringstream out;
  out << ".tmp." << getpid() << "." << std::this_thread::get_id() << "."
      << std::chrono::steady_clock::now().time_since_epoch().count();
  return out.str();
}

void write_file_atomically(const fs::path& path, const std::string& bytes) {
  fs::path temporary = path;
  temporary += unique_suffix();
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.flush();
    if (!out) {
      std::error_code ignored;
      fs::remove(temporary, ignored);
      throw EnvironmentError("cannot write " + temporary.string() + " (disk full or read-only?)");
    }
  }
  std::error_code error;
  fs::rename(temporary, path, error);
  if (error) {
    fs::remove(temporary, error);
    throw EnvironmentError("cannot rename into " + path.string() + ": " + error.message());
  }
}

}  // namespace

CompileError::CompileError(const std::string& program, std::string log, std::string log_path)
    : Error(ExitCode::internal, "NVRTC failed to compile " + program + " (full log: " + log_path +
                                    "):\n" + first_lines(log, 12)),
      log_(std::move(log)),
      log_path_(std::move(log_path)) {}

std::string JitCompiler::default_cache_dir() {
  if (const char* dir = std::getenv("ATTN_JIT_CACHE_DIR"); dir && *dir) return dir;
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return std::string(xdg) + "/attn-bench/jit";
  if (const char* home = std::getenv("HOME"); home && *home)
    return std::string(home) + "/.cache/attn-bench/jit";
  // A folder of this user's own in the shared temporary folder: cubins are loaded from the cache,
  // so nobody else may be able to put one there (check_cache_folder).
  return (fs::temp_directory_path() / ("attn-bench-jit-" + std::to_string(::geteuid()))).string();
}

JitCompiler::JitCompiler(JitOptions options)
    : nvrtc_(NvrtcApi::load()), options_(std::move(options)), pool_(options_.threads) {
  cache_dir_ = options_.cache_dir.empty() ? default_cache_dir() : options_.cache_dir;
  check_cache_folder(cache_dir_);
  nvrtc_version_ = nvrtc_->version();
  Sha256 headers;
  for (size_t i = 0; i < kKernelHeaders_count; ++i) {
    headers.update_field(kKernelHeaders[i].name).update_field(kKernelHeaders[i].text());
  }
  headers_digest_ = headers.hex_digest();
}

JitCompiler::~JitCompiler() = default;

void JitCompiler::check_cache_folder(const std::string& dir) {
  std::error_code error;
  // The folder itself is made private (0700) when we create it; its parents as the umask says.
  if (!fs::exists(dir, error)) {
    const fs::path parent = fs::path(dir).parent_path();
    if (!parent.empty()) fs::create_directories(parent, error);
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
      throw EnvironmentError("JIT cache folder " + dir + " cannot be created: " +
                             std::strerror(errno) + " (set ATTN_JIT_CACHE_DIR)");
    }
  }
  // Cached cubins are loaded and run: a folder another user owns, or one that others may write
  // into, could hand us their code under a key we trust.
  struct stat info {};
  if (::stat(dir.c_str(), &info) != 0) {
    throw EnvironmentError("JIT cache folder " + dir + " cannot be read: " + std::strerror(errno) +
                           " (set ATTN_JIT_CACHE_DIR)");
  }
  if (!S_ISDIR(info.st_mode)) {
    throw EnvironmentError("JIT cache folder " + dir + " is not a folder (set ATTN_JIT_CACHE_DIR)");
  }
  if (info.st_uid != ::geteuid()) {
    throw EnvironmentError("JIT cache folder " + dir + " belongs to another user (uid " +
                           std::to_string(info.st_uid) +
                           "): its cubins are not trusted; set ATTN_JIT_CACHE_DIR to a folder of "
                           "your own");
  }
  if ((info.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", unsigned(info.st_mode & 07777));
    throw EnvironmentError("JIT cache folder " + dir +
                           " is writable by its group or by others (mode " + mode +
                           "): its cubins are not trusted; `chmod go-w " + dir +
                           "`, or set ATTN_JIT_CACHE_DIR to a private folder");
  }
  fs::create_directories(fs::path(dir) / "failed", error);
  if (error) {
    throw EnvironmentError("JIT cache folder " + dir + " cannot be created: " + error.message() +
                           " (set ATTN_JIT_CACHE_DIR)");
  }
  fs::directory_iterator listing(dir, error);
  if (error) {
    throw EnvironmentError("JIT cache folder " + dir + " cannot be read: " + error.message() +
                           " (set ATTN_JIT_CACHE_DIR)");
  }
  const fs::path probe = fs::path(dir) / ("write-test" + unique_suffix());
  try {
    write_file_atomically(probe, "attn-bench JIT cache write test\n");
  } catch (const EnvironmentError& e) {
    throw EnvironmentError("JIT cache folder " + dir + " is not writable: " + e.what() +
                           " (set ATTN_JIT_CACHE_DIR)");
  }
  fs::remove(probe, error);
}

std::string JitCompiler::nvrtc_version() const {
  return nvrtc_version_;
}
std::string JitCompiler::nvrtc_library() const {
  return nvrtc_->library_path;
}

std::string JitCompiler::cache_key(const JitProgram& program) const {
  Sha256 key;
  key.update_field("attn-bench jit v1").update_field(nvrtc_version_).update_field(program.arch);
  for (const auto& option : program.options) key.update_field(option);
  key.update_field(program.source);
  for (const auto& kernel : program.kernels) key.update_field(kernel);
  key.update_field(headers_digest_);
  // Only programs with headers of their own hash them, so every other key stays as it was.
  for (const auto& [name, text] : program.headers) key.update_field(name).update_field(text);
  return key.hex_digest();
}

std::string JitCompiler::entry_path(const std::string& key) const {
  return (fs::path(cache_dir_) / key.substr(0, 2) / (key + ".cubin")).string();
}

std::optional<std::string> read_verified_cache_entry(const std::string& entry_path) {
  std::ifstream hash_file(entry_path + ".sha256", std::ios::binary);
  std::string recorded;
  if (!(hash_file >> recorded) || recorded.size() != 64) return std::nullopt;
  std::ifstream in(entry_path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (sha256_hex(bytes) != recorded) return std::nullopt;
  return bytes;
}

void write_verified_cache_entry(const std::string& entry_path, const std::string& bytes) {
  // The hash first: a reader that finds the new entry with the old hash (or the reverse, when
  // two processes write one key) sees a mismatch and recompiles; it never loads unchecked bytes.
  write_file_atomically(entry_path + ".sha256", sha256_hex(bytes) + "\n");
  write_file_atomically(entry_path, bytes);
}

bool JitCompiler::read_cache(const std::string& key, CompiledProgram* out) const {
  const std::optional<std::string> entry = read_verified_cache_entry(entry_path(key));
  if (!entry) return false;  // missing, or damaged or changed since it was written: recompiled
  std::istringstream in(*entry);
  std::string magic(sizeof(kCacheMagic) - 1, '\0');
  in.read(magic.data(), std::streamsize(magic.size()));
  if (magic != kCacheMagic) return false;
  std::string line;
  if (!std::getline(in, line)) return false;
  size_t names = std::strtoul(line.c_str(), nullptr, 10);
  std::map<std::string, std::string> lowered;
  for (size_t i = 0; i < names; ++i) {
    if (!std::getline(in, line)) return false;
    size_t tab = line.find('\t');
    if (tab == std::string::npos) return false;
    lowered[line.substr(0, tab)] = line.substr(tab + 1);
  }
  std::vector<char> cubin((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (cubin.empty()) return false;  // a damaged entry is recompiled and overwritten
  out->cubin = std::move(cubin);
  out->lowered_names = std::move(lowered);
  return true;
}

void JitCompiler::write_cache(const CompiledProgram& compiled) const {
  std::string bytes = kCacheMagic;
  bytes += std::to_string(compiled.lowered_names.size()) + "\n";
  for (const auto& [expression, lowered] : compiled.lowered_names) {
    bytes += expression + "\t" + lowered + "\n";
  }
  bytes.append(compiled.cubin.data(), compiled.cubin.size());
  fs::path path = entry_path(compiled.key);
  std::error_code error;
  fs::create_directories(path.parent_path(), error);
  write_verified_cache_entry(path.string(), bytes);
}

CompiledProgram JitCompiler::compile(const JitProgram& program) {
  CompiledProgram compiled;
  compiled.key = cache_key(program);
  compiled.name = program.name;
  auto start = std::chrono::steady_clock::now();
  if (options_.use_cache && read_cache(compiled.key, &compiled)) {
    bool complete = true;
    for (const auto& kernel : program.kernels) complete &= compiled.lowered_names.count(kernel) > 0;
    if (complete) {
      compiled.cache_hit = true;
      return compiled;
    }
  }

  std::vector<const char*> header_sources, header_names;
  for (size_t i = 0; i < kKernelHeaders_count; ++i) {
    header_sources.push_back(kKernelHeaders[i].data);
    header_names.push_back(kKernelHeaders[i].name);
  }
  for (const auto& [name, text] : program.headers) {
    header_sources.push_back(text.c_str());
    header_names.push_back(name.c_str());
  }
  nvrtcProgram handle = nullptr;
  ATTN_NVRTC_CHECK(
      *nvrtc_,
      nvrtcCreateProgram(&handle, program.source.c_str(), (program.name + ".cu").c_str(),
                         int(header_sources.size()), header_sources.data(), header_names.data()));
  struct ProgramOwner {
    const NvrtcApi* api;
    nvrtcProgram* handle;
    ~ProgramOwner() { api->nvrtcDestroyProgram(handle); }
  } owner{nvrtc_.get(), &handle};

  for (const auto& kernel : program.kernels) {
    ATTN_NVRTC_CHECK(*nvrtc_, nvrtcAddNameExpression(handle, kernel.c_str()));
  }
  std::vector<std::string> options = {"--std=c++17", "--gpu-architecture=" + program.arch,
                                      "-lineinfo"};
  options.insert(options.end(), program.options.begin(), program.options.end());
  std::vector<const char*> option_pointers;
  for (const auto& option : options) option_pointers.push_back(option.c_str());

  nvrtcResult result =
      nvrtc_->nvrtcCompileProgram(handle, int(option_pointers.size()), option_pointers.data());
  size_t log_size = 0;
  ATTN_NVRTC_CHECK(*nvrtc_, nvrtcGetProgramLogSize(handle, &log_size));
  std::string log(log_size, '\0');
  if (log_size > 0) ATTN_NVRTC_CHECK(*nvrtc_, nvrtcGetProgramLog(handle, log.data()));
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();

  if (result != NVRTC_SUCCESS) {
    fs::path log_path = fs::path(cache_dir_) / "failed" / (compiled.key + ".log");
    std::ostringstream record;
    record << "program: " << program.name << "\nnvrtc: " << nvrtc_version_ << "\noptions:";
    for (const auto& option : options) record << " " << option;
    record << "\nname expressions:";
    for (const auto& kernel : program.kernels) record << "\n  " << kernel;
    record << "\n--- source ---\n" << program.source << "\n--- log ---\n" << log << "\n";
    try {
      write_file_atomically(log_path, record.str());
    } catch (const EnvironmentError&) {
      log_path = "(could not be written)";
    }
    throw CompileError(program.name, log, log_path.string());
  }

  size_t cubin_size = 0;
  ATTN_NVRTC_CHECK(*nvrtc_, nvrtcGetCUBINSize(handle, &cubin_size));
  compiled.cubin.resize(cubin_size);
  ATTN_NVRTC_CHECK(*nvrtc_, nvrtcGetCUBIN(handle, compiled.cubin.data()));
  for (const auto& kernel : program.kernels) {
    const char* lowered = nullptr;
    ATTN_NVRTC_CHECK(*nvrtc_, nvrtcGetLoweredName(handle, kernel.c_str(), &lowered));
    compiled.lowered_names[kernel] = lowered;
  }
  compiled.log = log;
  compiled.compile_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_cache(compiled);
  return compiled;
}

std::future<CompiledProgram> JitCompiler::compile_async(JitProgram program) {
  return pool_.submit([this, program = std::move(program)] { return compile(program); });
}

}  // namespace attn
