// libFuzzer harness for tokenizer.json: any bytes must load as a tokenizer or fail with an error,
// never an exception, a crash or a huge allocation. A loaded tokenizer must encode text to ids inside
// its vocabulary and decode any ids (its own and foreign ones) to valid UTF-8 (decoded text reaches
// the terminal and JSON output). The loader reads files, so each input is written to a file first.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/utf8.h"
#include "tokenizer/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agentcompile;
  // One scratch file per process, removed at exit.
  static const struct Scratch {
    std::filesystem::path path = std::filesystem::temp_directory_path() / ("fuzz-tokenizer-" + std::to_string(getpid()) + ".json");
    ~Scratch() {
      std::error_code ignored;
      std::filesystem::remove(path, ignored);
    }
  } scratch;
  const std::filesystem::path& file = scratch.path;
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  auto tokenizer = tokenizer::Tokenizer::from_tokenizer_json(file);
  if (!tokenizer) return 0;
  const std::vector<int32_t> ids = tokenizer->encode("Hello, world! 123 h\xC3\xA9llo \xF0\x9F\x99\x82 <|im_end|>\n\t x");
  for (int32_t id : ids)
    if (id < 0 || static_cast<size_t>(id) >= tokenizer->vocab_size()) __builtin_trap();
  std::vector<int32_t> any = ids;
  for (int32_t id : {0, 1, 2, 255, 256, 1000, 1 << 20, -1}) any.push_back(id);
  if (!support::utf8::is_valid(tokenizer->decode(any))) __builtin_trap();
  if (!support::utf8::is_valid(tokenizer->decode(any, /*skip_special=*/true))) __builtin_trap();
  return 0;
}
