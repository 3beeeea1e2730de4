// libFuzzer harness for advisor replies: whatever bytes a backend returns go through what the advisor
// does with them (UTF-8 repair where the reply enters the compiler, the advice validator, the diagnosis
// judge) and must give a verdict whose every recorded string is valid UTF-8 and bounded (values and
// names from the reply 200 characters, risk notes 300 as docs/advisor.md says, a diagnosis 1000 plus
// its suspects), never an exception or a crash. Replies longer than the advisor takes
// (advisor::kMaxReplyBytes) never reach the validator, so they are skipped.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "advisor/advisor.h"
#include "advisor/validate.h"
#include "support/utf8.h"

namespace {

using namespace agentcompile;

advisor::Request make_request() {
  advisor::Request request;
  request.kind = "advice";
  request.region = "decode.r1";
  request.body = {{"allowed",
                   {{"labels", {"gemv", "gemm"}},
                    {"candidates", {"c0", "c1", "c2"}},
                    {"hints", {{"split", {1, 2, 4}}, {"vec", {4, 8}}}},
                    {"risk_kinds", advisor::risk_kinds()}}}};
  return request;
}

size_t characters(const std::string& text) {
  size_t count = 0;
  for (unsigned char c : text) count += (c & 0xC0) != 0x80;
  return count;
}

// Every string a record keeps must be storable in JSON (valid UTF-8) and at most `limit` characters.
void check(const std::string& text, size_t limit) {
  if (!support::utf8::is_valid(text) || characters(text) > limit) __builtin_trap();
  (void)nlohmann::json(text).dump();  // throws (and so fails the run) on invalid UTF-8
}

void check(const advisor::Verdict& v) {
  for (const auto& r : v.rejected) {
    check(r.part, 220);
    check(r.value, 200);
    check(r.reason, 1000);
  }
  for (const auto& i : v.ignored) check(i.part, 200);
  for (const auto& risk : v.risks) check(risk.note, 300);
  check(v.label, 200);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const advisor::Request request = make_request();
  if (size > advisor::kMaxReplyBytes) return 0;
  const std::string reply = support::utf8::repaired(std::string_view(reinterpret_cast<const char*>(data), size));
  check(advisor::validate_advice(request, reply));
  std::string diagnosis;
  check(advisor::judge_diagnosis(request, reply, &diagnosis));
  check(diagnosis, 1000 + 20 + 200);
  return 0;
}
