// count_newlines: compares sixteen bytes at a time and sums the matches in byte counters, which
// are added up before they can overflow (every 255 blocks).
#include "conveyor/stages/count_lines.hpp"

#include <algorithm>
#include <cstdint>

#if defined(__SSE2__) && defined(__x86_64__)
#include <emmintrin.h>
#endif

namespace conveyor::stages {

std::size_t count_newlines(std::string_view text) noexcept {
  const char* at = text.data();
  const char* const end = at + text.size();
  std::size_t count = 0;
#if defined(__SSE2__) && defined(__x86_64__)
  const __m128i newline = _mm_set1_epi8('\n');
  const __m128i zero = _mm_setzero_si128();
  while (end - at >= 16) {
    const std::size_t blocks = std::min<std::size_t>(static_cast<std::size_t>(end - at) / 16, 255);
    __m128i counters = zero;  // each byte: matches in its lane so far (a match is -1)
    for (std::size_t i = 0; i < blocks; ++i, at += 16) {
      const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
      counters = _mm_sub_epi8(counters, _mm_cmpeq_epi8(bytes, newline));
    }
    // Sums of eight bytes each, in the two halves.
    const __m128i sums = _mm_sad_epu8(counters, zero);
    count += static_cast<std::size_t>(_mm_cvtsi128_si64(sums)) +
             static_cast<std::size_t>(_mm_cvtsi128_si64(_mm_unpackhi_epi64(sums, sums)));
  }
#endif
  return count + static_cast<std::size_t>(std::count(at, end, '\n'));
}

}  // namespace conveyor::stages
