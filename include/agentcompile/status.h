// Status and Expected<T>: how library code reports failure.
//
// Library code never prints and never exits; it returns a Status (or an Expected<T>) whose message names
// the file, tensor, key, region or parameter at fault. Only tools/ and tests turn errors into output.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace agentcompile {

enum class ErrorCode {
  kOk = 0,
  kInvalidArgument,  // the caller passed something malformed
  kNotFound,         // a file, tensor or key is missing
  kParse,            // a file's bytes do not form what its format promises
  kUnsupported,      // well-formed, but something we do not implement (architecture, dtype, quant type)
  kMismatch,         // two sources disagree (checkpoint vs config, artifact vs model)
  kIo,               // the operating system refused (open, mmap, write)
  kResourceExhausted,  // not enough device memory or cache rows for what was asked
  kInternal,         // a bug of ours
};

const char* error_code_name(ErrorCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(ErrorCode code, std::string message) : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool is_ok() const { return code_ == ErrorCode::kOk; }
  explicit operator bool() const { return is_ok(); }
  ErrorCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // "parse error: model.safetensors: header length 912 runs past end of file (size 40)"
  std::string to_string() const;

  // Prefixes context ("loading model.layers.3.mlp.up_proj.weight: ") while keeping the code.
  Status with_context(const std::string& context) const;

 private:
  ErrorCode code_ = ErrorCode::kOk;
  std::string message_;
};

inline Status error(ErrorCode code, std::string message) { return Status(code, std::move(message)); }

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : state_(std::move(value)) {}
  Expected(Status status) : state_(std::move(status)) {}

  bool has_value() const { return std::holds_alternative<T>(state_); }
  explicit operator bool() const { return has_value(); }

  T& value() & { return std::get<T>(state_); }
  const T& value() const& { return std::get<T>(state_); }
  T&& value() && { return std::get<T>(std::move(state_)); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  // The error; only meaningful when !has_value().
  const Status& status() const { return std::get<Status>(state_); }

 private:
  std::variant<T, Status> state_;
};

}  // namespace agentcompile

// Early-return helpers. AC_TRY returns a failing Status; AC_ASSIGN_OR_RETURN unwraps an Expected.
#define AC_CONCAT_INNER(a, b) a##b
#define AC_CONCAT(a, b) AC_CONCAT_INNER(a, b)

#define AC_TRY(expr)                                    \
  do {                                                  \
    ::agentcompile::Status ac_try_status_ = (expr);     \
    if (!ac_try_status_.is_ok()) return ac_try_status_; \
  } while (0)

#define AC_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.has_value()) return tmp.status();     \
  lhs = std::move(tmp).value()

#define AC_ASSIGN_OR_RETURN(lhs, expr) AC_ASSIGN_OR_RETURN_IMPL(AC_CONCAT(ac_expected_, __LINE__), lhs, expr)
