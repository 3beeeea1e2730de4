// UTF-8 validation and maximal-subpart repair (see utf8.h).
#include "support/utf8.h"

#include <algorithm>
#include <cstring>

namespace agentcompile::support::utf8 {

namespace {

struct LeadInfo {
  uint8_t length;       // 0: this byte starts no well-formed sequence
  uint8_t second_low;   // the range the second byte must lie in (Unicode Table 3-7)
  uint8_t second_high;
};

LeadInfo lead_info(uint8_t lead) {
  if (lead < 0x80) return {1, 0, 0};
  if (lead < 0xC2) return {0, 0, 0};
  if (lead < 0xE0) return {2, 0x80, 0xBF};
  if (lead == 0xE0) return {3, 0xA0, 0xBF};
  if (lead == 0xED) return {3, 0x80, 0x9F};  // no surrogates
  if (lead < 0xF0) return {3, 0x80, 0xBF};
  if (lead == 0xF0) return {4, 0x90, 0xBF};  // no overlong 4-byte forms
  if (lead < 0xF4) return {4, 0x80, 0xBF};
  if (lead == 0xF4) return {4, 0x80, 0x8F};  // nothing past U+10FFFF
  return {0, 0, 0};
}

// How many bytes starting at `p` form a well-formed sequence (returned in `length`), or how many form
// the maximal subpart of one (`length` 0, `subpart` >= 1; `truncated` when the input ended inside it).
struct SequenceScan {
  size_t length = 0;
  size_t subpart = 0;
  bool truncated = false;
};

SequenceScan scan_sequence(const uint8_t* p, size_t available) {
  const LeadInfo info = lead_info(p[0]);
  if (info.length == 0) return {0, 1, false};
  if (info.length == 1) return {1, 0, false};
  size_t i = 1;
  for (; i < info.length; ++i) {
    if (i >= available) return {0, i, true};
    const uint8_t low = i == 1 ? info.second_low : 0x80;
    const uint8_t high = i == 1 ? info.second_high : 0xBF;
    if (p[i] < low || p[i] > high) return {0, i, false};
  }
  return {info.length, 0, false};
}

size_t ascii_prefix(const uint8_t* p, size_t size) {
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    std::memcpy(&word, p + i, 8);
    if (word & 0x8080808080808080ull) break;
  }
  while (i < size && p[i] < 0x80) ++i;
  return i;
}

}  // namespace

bool is_valid(std::string_view bytes) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  size_t i = ascii_prefix(p, size);
  while (i < size) {
    if (p[i] < 0x80) {
      i += ascii_prefix(p + i, size - i);
      continue;
    }
    const SequenceScan scan = scan_sequence(p + i, size - i);
    if (scan.length == 0) return false;
    i += scan.length;
  }
  return true;
}

size_t append_repaired(std::string& out, std::string_view bytes, bool final) {
  const auto* p = reinterpret_cast<const uint8_t*>(bytes.data());
  const size_t size = bytes.size();
  size_t i = 0;
  size_t run_start = 0;  // start of the well-formed run not yet copied
  while (i < size) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const SequenceScan scan = scan_sequence(p + i, size - i);
    if (scan.length) {
      i += scan.length;
      continue;
    }
    out.append(bytes.data() + run_start, i - run_start);
    if (scan.truncated && !final) return i;
    out.append(kReplacement);
    i += scan.subpart;
    run_start = i;
  }
  out.append(bytes.data() + run_start, size - run_start);
  return size;
}

std::string repaired(std::string_view bytes) {
  if (is_valid(bytes)) return std::string(bytes);
  std::string out;
  out.reserve(bytes.size() + 16);
  append_repaired(out, bytes, true);
  return out;
}

void append_code_point(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

bool is_white_space(uint32_t cp) {
  if (cp <= 0x20) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
  if (cp < 0x85) return false;
  return cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string truncated(std::string_view text, size_t max_chars, std::string_view marker) {
  auto is_continuation = [](char c) { return (static_cast<uint8_t>(c) & 0xC0) == 0x80; };
  // The byte where character number `n` starts (text.size() when there are fewer).
  auto start_of = [&](size_t n) {
    size_t pos = 0;
    for (size_t seen = 0; pos < text.size(); ++pos)
      if (!is_continuation(text[pos]) && seen++ == n) return pos;
    return text.size();
  };
  if (start_of(max_chars) == text.size()) return std::string(text);
  const size_t marker_chars = static_cast<size_t>(std::count_if(marker.begin(), marker.end(), [&](char c) { return !is_continuation(c); }));
  const size_t keep = max_chars > marker_chars ? max_chars - marker_chars : 0;
  return std::string(text.substr(0, start_of(keep))) + std::string(marker);
}

}  // namespace agentcompile::support::utf8
