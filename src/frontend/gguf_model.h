// A GGUF file seen as a Hugging Face checkpoint: the ModelConfig its metadata describes (with an
// equivalent config.json in `raw`) and a WeightStore that serves its tensors under HF names, in HF
// shape order and, for llama, in HF's rotate-half row order for q_proj/k_proj.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "agentcompile/status.h"
#include "frontend/gguf.h"
#include "frontend/model_config.h"
#include "frontend/weights.h"

namespace agentcompile::frontend {

// Reads `<arch>.*` metadata for arch in {llama, qwen2, qwen3}, builds the equivalent HF config.json
// (torch_dtype float16: GGUF weights are dequantized to f16 for the GPU) and validates it through
// parse_hf_config, so both formats agree on every derived field. Errors name `source` and the GGUF key
// or tensor at fault; RoPE scaling (rope_freqs.weight, <arch>.rope.scaling.type) is kUnsupported.
Expected<ModelConfig> gguf_model_config(const GgufFile& gguf, const std::string& source);

// "blk.3.attn_q.weight" -> "model.layers.3.self_attn.q_proj.weight", "token_embd.weight" ->
// "model.embed_tokens.weight", ...; a name without a mapping comes back unchanged.
std::string gguf_to_hf_name(std::string_view gguf_name);

class GgufStore : public WeightStore {
 public:
  const std::vector<TensorInfo>& tensors() const override { return tensors_; }
  // Dequantizes to f32; for llama undoes llama.cpp's interleaving of q/k rows. Errors name the file
  // and the tensor.
  Status read_f32(const std::string& name, std::vector<float>& out) const override;
  // The stored blocks (for llama's q/k, whole rows of blocks moved back into HF order).
  Status read_stored(const std::string& name, ir::DType format, std::vector<uint8_t>& out) const override;
  std::string source() const override { return file_->path().string(); }
  std::string tensor_label(const std::string& name) const override;
  bool dtypes_are_exact() const override { return false; }

  const GgufFile& gguf() const { return file_->gguf(); }
  // The GGUF record behind an HF name, or null.
  const GgufTensorInfo* gguf_tensor(const std::string& hf_name) const;

 private:
  friend Expected<std::unique_ptr<GgufStore>> open_gguf_checkpoint(const std::filesystem::path& path);
  struct Entry {
    const GgufTensorInfo* tensor;
    int64_t rope_heads;  // > 0: rows are interleaved per head by llama.cpp's permute and must be undone
  };
  std::unique_ptr<GgufModelFile> file_;
  std::vector<TensorInfo> tensors_;
  std::unordered_map<std::string, Entry> entries_;
};

// Maps the file and indexes its tensors. Fails if the file does not parse, if two tensors map to one
// HF name, or (llama) if q/k rows do not split into heads.
Expected<std::unique_ptr<GgufStore>> open_gguf_checkpoint(const std::filesystem::path& path);

// Undoes llama.cpp's `permute` on a [rows, row_len] tensor (row_len = 1 for a bias): within each of
// `heads` heads of D = rows / heads rows, GGUF row 2·i + s holds HF row s·D/2 + i. Rows are moved
// whole, so the same applies to stored bytes (a row of blocks).
template <typename T>
void unpermute_llama_rows(std::vector<T>& data, int64_t rows, int64_t heads);

}  // namespace agentcompile::frontend
