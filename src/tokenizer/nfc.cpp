// NFC as UAX #15 defines it, in three passes over code points:
//   1. decompose each code point fully (table lookup; Hangul syllables by arithmetic),
//   2. put each run of non-starters in canonical order (a stable sort by combining class),
//   3. compose: a character joins the last starter when no character between them blocks it (one of
//      class 0 or of a class not below its own) and the pair has a primary composite.
// The quick check lets ordinary text skip all of it.
#include "tokenizer/nfc.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "tokenizer/nfc_tables.h"
#include "tokenizer/utf8.h"

namespace agentcompile::tokenizer {

namespace {

constexpr uint32_t kHangulBase = 0xAC00, kHangulCount = 11172;
constexpr uint32_t kLeadBase = 0x1100, kVowelBase = 0x1161, kTrailBase = 0x11A7;
constexpr uint32_t kLeadCount = 19, kVowelCount = 21, kTrailCount = 28;
constexpr uint32_t kVowelTrailCount = kVowelCount * kTrailCount;

// Below U+0300 no code point combines or joins a neighbour; below U+00C0 none decomposes either.
constexpr uint32_t kFirstInteresting = 0x300;
constexpr uint32_t kFirstDecomposable = 0xC0;

uint8_t combining_class(uint32_t cp) {
  if (cp < kFirstInteresting) return 0;
  const auto* begin = nfc::kCombiningClassRanges;
  const auto* end = begin + nfc::kCombiningClassRangesCount;
  const auto* it = std::upper_bound(begin, end, cp, [](uint32_t value, const nfc::CombiningClassRange& range) {
    return value < range.first;
  });
  if (it == begin) return 0;
  --it;
  return cp <= it->last ? it->combining_class : 0;
}

bool is_unsafe(uint32_t cp) {
  if (cp < kFirstInteresting) return false;
  const auto* begin = nfc::kNfcUnsafeRanges;
  const auto* end = begin + nfc::kNfcUnsafeRangesCount;
  const auto* it = std::upper_bound(begin, end, cp, [](uint32_t value, const nfc::CodePointRange& range) {
    return value < range.first;
  });
  if (it == begin) return false;
  --it;
  return cp <= it->last;
}

void decompose(uint32_t cp, std::vector<uint32_t>& out) {
  if (cp < kFirstDecomposable) {
    out.push_back(cp);
    return;
  }
  if (cp >= kHangulBase && cp < kHangulBase + kHangulCount) {
    const uint32_t index = cp - kHangulBase;
    out.push_back(kLeadBase + index / kVowelTrailCount);
    out.push_back(kVowelBase + (index % kVowelTrailCount) / kTrailCount);
    if (index % kTrailCount) out.push_back(kTrailBase + index % kTrailCount);
    return;
  }
  const auto* begin = nfc::kDecompositions;
  const auto* end = begin + nfc::kDecompositionsCount;
  const auto* it = std::lower_bound(begin, end, cp, [](const nfc::Decomposition& d, uint32_t value) {
    return d.code_point < value;
  });
  if (it == end || it->code_point != cp) {
    out.push_back(cp);
    return;
  }
  out.insert(out.end(), nfc::kDecompositionPool + it->offset, nfc::kDecompositionPool + it->offset + it->length);
}

// The primary composite of (first, second), or 0.
uint32_t compose_pair(uint32_t first, uint32_t second) {
  if (first >= kLeadBase && first < kLeadBase + kLeadCount && second >= kVowelBase &&
      second < kVowelBase + kVowelCount) {
    return kHangulBase + ((first - kLeadBase) * kVowelCount + (second - kVowelBase)) * kTrailCount;
  }
  if (first >= kHangulBase && first < kHangulBase + kHangulCount && (first - kHangulBase) % kTrailCount == 0 &&
      second > kTrailBase && second < kTrailBase + kTrailCount) {
    return first + (second - kTrailBase);
  }
  const auto* begin = nfc::kCompositions;
  const auto* end = begin + nfc::kCompositionsCount;
  const auto* it = std::lower_bound(begin, end, std::pair{first, second}, [](const nfc::Composition& c, auto key) {
    return c.first != key.first ? c.first < key.first : c.second < key.second;
  });
  if (it == end || it->first != first || it->second != second) return 0;
  return it->composite;
}

void sort_non_starter_runs(std::vector<uint32_t>& cps) {
  size_t i = 0;
  while (i < cps.size()) {
    if (combining_class(cps[i]) == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && combining_class(cps[j]) != 0) ++j;
    if (j - i > 1) {
      std::stable_sort(cps.begin() + i, cps.begin() + j,
                       [](uint32_t a, uint32_t b) { return combining_class(a) < combining_class(b); });
    }
    i = j;
  }
}

std::vector<uint32_t> compose(const std::vector<uint32_t>& cps) {
  std::vector<uint32_t> out;
  out.reserve(cps.size());
  size_t starter = SIZE_MAX;   // index in `out` of the last starter
  int last_class = 0;          // class of the last character appended after it
  for (uint32_t cp : cps) {
    const int cls = combining_class(cp);
    if (starter != SIZE_MAX) {
      const bool adjacent = starter == out.size() - 1;
      if (adjacent || (last_class != 0 && last_class < cls)) {
        if (const uint32_t composite = compose_pair(out[starter], cp)) {
          out[starter] = composite;
          continue;
        }
      }
    }
    if (cls == 0) starter = out.size();
    last_class = cls;
    out.push_back(cp);
  }
  return out;
}

}  // namespace

bool is_nfc_quick(std::string_view text) {
  size_t pos = 0;
  while (pos < text.size()) {
    if (static_cast<uint8_t>(text[pos]) < 0xCC) {  // lead bytes below 0xCC encode code points below U+0300
      ++pos;
      continue;
    }
    if (is_unsafe(utf8::next_code_point(text, pos))) return false;
  }
  return true;
}

std::string to_nfc(std::string_view text) {
  if (is_nfc_quick(text)) return std::string(text);
  std::vector<uint32_t> decomposed;
  decomposed.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) decompose(utf8::next_code_point(text, pos), decomposed);
  sort_non_starter_runs(decomposed);
  std::string out;
  out.reserve(text.size());
  for (uint32_t cp : compose(decomposed)) utf8::append_code_point(out, cp);
  return out;
}

}  // namespace agentcompile::tokenizer
