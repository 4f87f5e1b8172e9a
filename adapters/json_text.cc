#include "adapters/json_text.h"

#include "adapters/json_reader.h"

namespace egress::adapters {

bool IsJsonText(std::string_view text) {
  JsonReader reader(text);
  return reader.SkipByteOrderMark() && reader.SkipValue() && reader.AtEnd();
}

}  // namespace egress::adapters
