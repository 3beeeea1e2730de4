// The Unicode data behind nfc.cpp, generated into nfc_tables.cpp by python/make_nfc_tables.py.
// Every table is sorted by its first field so lookups are binary searches.
#pragma once

#include <cstddef>
#include <cstdint>

namespace agentcompile::tokenizer::nfc {

struct CombiningClassRange {
  uint32_t first;
  uint32_t last;
  uint8_t combining_class;  // nonzero
};

struct Decomposition {
  uint32_t code_point;
  uint16_t offset;  // into kDecompositionPool
  uint8_t length;
};

struct Composition {
  uint32_t first;
  uint32_t second;
  uint32_t composite;
};

struct CodePointRange {
  uint32_t first;
  uint32_t last;
};

extern const char kUnicodeVersion[];
extern const CombiningClassRange kCombiningClassRanges[];
extern const size_t kCombiningClassRangesCount;
extern const Decomposition kDecompositions[];
extern const size_t kDecompositionsCount;
extern const uint32_t kDecompositionPool[];
extern const size_t kDecompositionPoolCount;
extern const Composition kCompositions[];
extern const size_t kCompositionsCount;
// Code points that may change under NFC or alter a neighbour; text without any is already NFC.
extern const CodePointRange kNfcUnsafeRanges[];
extern const size_t kNfcUnsafeRangesCount;

}  // namespace agentcompile::tokenizer::nfc
