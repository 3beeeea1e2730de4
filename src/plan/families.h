// The template families, one file each under src/plan/families/.
#pragma once

#include "plan/template_family.h"

namespace agentcompile::plan {

const TemplateFamily& gemv_family();
const TemplateFamily& rmsnorm_family();
const TemplateFamily& embedding_family();
const TemplateFamily& elementwise_family();
const TemplateFamily& softmax_family();
const TemplateFamily& reduction_family();
const TemplateFamily& rope_kv_family();
const TemplateFamily& attention_decode_family();
const TemplateFamily& attention_prefill_family();
const TemplateFamily& gemm_family();
const TemplateFamily& cublas_family();
const TemplateFamily& attention_reference_family();
const TemplateFamily& layernorm_family();
const TemplateFamily& scan_family();
const TemplateFamily& column_family();
const TemplateFamily& copy_family();
const TemplateFamily& gather_family();

}  // namespace agentcompile::plan
