#include "tests/support/source_root.h"

namespace egress {

// EGRESS_SOURCE_DIR is set for this file alone (tests/CMakeLists.txt), so no other object
// depends on where the checkout is.
std::string SourceRoot() { return EGRESS_SOURCE_DIR; }

}  // namespace egress
