// libFuzzer harness for metadata.json, the artifact's record that compile reuses and the runtime
// loads: any bytes must parse to an ArtifactRecord or to an error naming the member, never an
// exception or a crash (artifact_record.h). A parsed record's buckets are also searched, as the
// runtime does for every call.
#include <cstddef>
#include <cstdint>
#include <string>

#include "emit/artifact_record.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace agentcompile;
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto record = emit::parse_artifact_text(text, "fuzz/metadata.json");
  if (!record) return 0;
  for (const auto& [name, function] : record->functions)
    for (int64_t tokens : {int64_t{1}, int64_t{7}, int64_t{4096}})
      for (int64_t context : {int64_t{1}, int64_t{100}, int64_t{1} << 20}) (void)function.bucket_for(tokens, context);
  return 0;
}
