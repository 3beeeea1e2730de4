// The artifact's metadata.json read back as typed records: the one reader of the format, used by
// the compiler (warm reuse, the cache, the summary), the output-directory checks and the runtime.
//
// Every member a reader relies on is checked for presence and type here, so a metadata.json of any
// shape (an array, a number, a truncated file, members of the wrong type) is an error that names
// the file and the member, never an exception. What the compiler alone records (advice, timings,
// validation errors) stays in the JSON for people and tools; readers here take only what they use.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agentcompile/status.h"
#include "ir/graph.h"
#include "plan/candidate.h"

namespace agentcompile::emit {

// The format this build writes and reads. 2: metadata.json lists every file with its size and hash.
inline constexpr const char* kArtifactFormat = "agentcompile-artifact/2";
// Every version's format string starts so: how a directory is recognised as an agentcompile artifact.
inline constexpr const char* kArtifactFormatFamily = "agentcompile-artifact/";

// One file of the artifact (path relative to its directory), as written.
struct FileEntry {
  std::string path;
  uint64_t bytes = 0;
  std::string sha256;
};

// The calls one selection serves: a range of T, and for decode a range of the context (the keys
// a step's attention reads); max_context 0 means any context.
struct BucketRecord {
  std::string name;
  int64_t min_tokens = 1, max_tokens = 1;
  int64_t min_context = 0, max_context = 0;
  bool holds(int64_t tokens, int64_t context) const {
    return tokens >= min_tokens && tokens <= max_tokens && (max_context == 0 || (context >= min_context && context <= max_context));
  }
};

// One region site of a function: what it reads and writes, in interface-slot order.
struct SiteRecord {
  int site = 0;
  std::string region;                 // unique region id, "decode.r3"
  std::vector<ir::ValueId> inputs, outputs;
  std::vector<std::string> params, states;
};

struct FunctionRecord {
  std::string name;
  std::vector<BucketRecord> buckets;
  std::vector<SiteRecord> sites;
  // The bucket that holds a call of `tokens` tokens whose attention reads `context` keys, or an
  // error naming the function and the bucket ranges.
  Expected<const BucketRecord*> bucket_for(int64_t tokens, int64_t context) const;
};

struct CandidateEntry {
  std::string id;
  bool compiled = false;              // NVRTC built it (library calls: false)
  std::string validation;             // "validated" | "rejected" | "unvalidated" | "not measured"
};

struct SelectionEntry {
  std::string bucket;
  std::optional<std::string> candidate;  // unset: no candidate usable at this bucket
  std::string reason;
};

struct RegionEntry {
  std::string id;
  std::string label;
  std::vector<CandidateEntry> candidates;
  std::vector<SelectionEntry> selections;
  std::map<std::string, plan::Candidate> selected;  // by candidate id: every candidate some bucket selects
};

// A kernel the runtime launches itself, outside every region: the device sampler. It is compiled with
// the regions' kernels (the same NVRTC path and cache) and ships as a cubin beside theirs, so the
// runtime never compiles. `source` is what NVRTC compiles; `kernel` the entry point.
struct RuntimeKernelSpec {
  const char* role;
  const char* kernel;
  const char* source;
};
// Sampling from the last logits row on the device (src/kernels/sampling.cuh; runtime/sampler.h).
inline constexpr RuntimeKernelSpec kSamplerKernel{"sampler", "ac_sample", "#include \"sampling.cuh\"\n"};
// Tensor parallelism's small all-reduces over peer memory (kernels/peer_all_reduce.cuh; gpu/peer_all_reduce.h),
// in the artifact of a module with collectives; without it the runtime keeps every all-reduce on NCCL.
inline constexpr RuntimeKernelSpec kPeerAllReduceKernel{"peer_all_reduce", "ac_peer_all_reduce", "#include \"peer_all_reduce.cuh\"\n"};
// The greedy token of each row of a batched decode step (kernels/row_argmax.cuh; Engine::decode_rows), in
// the artifact of a module with decode_batch; without it the engine copies the rows and takes the argmax itself.
inline constexpr RuntimeKernelSpec kRowArgmaxKernel{"row_argmax", "ac_row_argmax", "#include \"row_argmax.cuh\"\n"};

// Where a runtime kernel is in the artifact.
struct RuntimeKernelEntry {
  std::string kernel;  // entry point, "ac_sample"
  std::string cubin;   // file of the artifact, "cubin/ac_sample.cubin"
};

struct ArtifactRecord {
  std::string format;
  std::string key;
  struct Model {
    std::string model_type, dtype, config_sha256;
    int64_t hidden_size = 0, num_layers = 0;
  } model;
  struct Device {
    std::string name, arch;
  } device;
  bool gpu_used = false;
  std::vector<FileEntry> files;       // every file but metadata.json
  std::map<std::string, FunctionRecord> functions;
  std::vector<RegionEntry> regions;
  // By role ("sampler"). Artifacts written before the runtime's kernels shipped in them have none.
  std::map<std::string, RuntimeKernelEntry> runtime_kernels;
  std::string advisor_line;           // the advice outcomes in one paragraph; empty without an advisor
  std::string ablation_table;         // ablation.json's table; empty unless the compile ran the ablation
};

// Parses a metadata.json document; `where` names it in errors.
Expected<ArtifactRecord> parse_artifact_record(const nlohmann::json& meta, const std::string& where);

// Parses the text of a metadata.json; `where` names it in errors.
Expected<ArtifactRecord> parse_artifact_text(const std::string& text, const std::string& where);

// Reads `dir`/metadata.json (and the ablation table beside it). kNotFound: there is none; kParse: it is not JSON of this format's shape;
// kUnsupported: another format version.
Expected<ArtifactRecord> read_artifact_record(const std::filesystem::path& dir);

// The format string of `dir`/metadata.json when it is a JSON object carrying one of the artifact
// family's (any version): whether `dir` is recognisably an agentcompile artifact. Else an error
// that says what the file is instead.
Expected<std::string> artifact_format_of(const std::filesystem::path& dir);

// The runtime kernels an artifact ships: the sampler where it generates (has a decode function), the
// peer all-reduce where its module has collectives, the row argmax where it has decode_batch. Only the
// sampler is required of an artifact read (check_runtime_kernels).
std::vector<RuntimeKernelSpec> runtime_kernels_for(bool generates, bool collectives = false, bool batched = false);

// kNotFound naming the first runtime kernel the record should carry and does not (an artifact
// compiled before they shipped in artifacts): it must be compiled again.
Status check_runtime_kernels(const ArtifactRecord& record);

// Whether `bytes` are the file `file` records (size and SHA-256); kMismatch says how they differ.
Status check_file_bytes(const FileEntry& file, std::string_view bytes);

// Every file the record lists is in `dir` with its recorded size and SHA-256; kMismatch names the
// first that is missing, of another size, or changed.
Status verify_artifact_files(const std::filesystem::path& dir, const ArtifactRecord& record);

// A candidate record from its metadata.json entry (the inverse of the emitter's).
Expected<plan::Candidate> candidate_from_json(const nlohmann::json& j);

}  // namespace agentcompile::emit
