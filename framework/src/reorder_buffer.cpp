#include <algorithm>

#include "conveyor/framework/detail/reorder_buffer.hpp"

namespace conveyor::detail {

void sort_by_offset(std::vector<PartOrder>& parts) {
  std::sort(parts.begin(), parts.end(),
            [](const PartOrder& a, const PartOrder& b) { return a.offset < b.offset; });
}

}  // namespace conveyor::detail
