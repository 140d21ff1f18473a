#include "corpora/internal/utf8.h"

namespace latentd::internal {
namespace {

// Pairs laid out as (upper, lower) at (even, odd) code points, or (odd, even)
// when `upper_odd`.
char32_t LowerPair(char32_t cp, bool upper_odd) {
  return ((cp & 1) == 1) == upper_odd ? cp + 1 : cp;
}

char32_t LowerLatinExtendedA(char32_t cp) {
  if (cp == 0x130) return U'i';  // capital I with dot above
  if (cp == 0x131 || cp == 0x138 || cp == 0x149 || cp == 0x17F) return cp;
  if (cp == 0x178) return 0xFF;  // Y with diaeresis
  if ((cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E)) {
    return LowerPair(cp, /*upper_odd=*/true);
  }
  return LowerPair(cp, /*upper_odd=*/false);
}

char32_t LowerGreek(char32_t cp) {
  switch (cp) {
    case 0x375:
    case 0x37E:
    case 0x384:
    case 0x385:
    case 0x387:
    case 0x3F6:
      return 0;  // signs and punctuation
    case 0x386:
      return 0x3AC;
    case 0x38C:
      return 0x3CC;
    case 0x38E:
    case 0x38F:
      return cp + 0x3F;
    default:
      break;
  }
  if (cp >= 0x388 && cp <= 0x38A) return cp + 0x25;
  if (cp >= 0x391 && cp <= 0x3AB && cp != 0x3A2) return cp + 0x20;
  return cp;
}

char32_t LowerCyrillic(char32_t cp) {
  if (cp == 0x482) return 0;  // thousands sign
  if (cp <= 0x40F) return cp + 0x50;
  if (cp <= 0x42F) return cp + 0x20;
  if (cp <= 0x45F) return cp;
  if (cp <= 0x481 || (cp >= 0x48A && cp <= 0x4BF) || cp >= 0x4D0) {
    return LowerPair(cp, /*upper_odd=*/false);
  }
  if (cp == 0x4C0) return 0x4CF;
  if (cp >= 0x4C1 && cp <= 0x4CE) return LowerPair(cp, /*upper_odd=*/true);
  return cp;
}

}  // namespace

char32_t LowerWordChar(char32_t cp) {
  if (cp < 0x80) {
    if (cp >= 'a' && cp <= 'z') return cp;
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    return 0;
  }
  if (cp < 0xC0) return 0;
  if (cp <= 0xFF) {
    if (cp == 0xD7 || cp == 0xF7) return 0;
    return (cp <= 0xDE && cp != 0xD7) ? cp + 0x20 : cp;
  }
  if (cp <= 0x17F) return LowerLatinExtendedA(cp);
  if (cp <= 0x24F) return cp;
  if (cp >= 0x300 && cp <= 0x36F) return cp;
  if (cp >= 0x370 && cp <= 0x3FF) return LowerGreek(cp);
  if (cp >= 0x400 && cp <= 0x4FF) return LowerCyrillic(cp);
  if (cp >= 0x1E00 && cp <= 0x1EFF) {
    if (cp <= 0x1E95 || cp >= 0x1EA0) return LowerPair(cp, false);
    return cp;
  }
  return 0;
}

}  // namespace latentd::internal
