#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "config/toml_sections.h"

namespace egress::config {

Status ReadSecretRefField(const TomlFields& fields, std::string_view field,
                          std::optional<adapters::SecretRef>& out) {
  const std::string file_key = std::string(field) + "_file";
  const std::string env_key = std::string(field) + "_env";
  if (fields.Has(file_key) && fields.Has(env_key)) {
    return fields.TableError(fields.Field(file_key),
                             fmt::format("set {} or {}, not both", file_key, env_key));
  }
  for (const auto& [key, kind] : {std::pair{file_key, adapters::SecretRef::Kind::kFile},
                                  std::pair{env_key, adapters::SecretRef::Kind::kEnv}}) {
    if (!fields.Has(key)) {
      continue;
    }
    adapters::SecretRef ref{.kind = kind};
    if (Status s = fields.ReadString(key, ref.where); !s.ok()) {
      return s;
    }
    if (ref.where.empty()) {
      return fields.Error(*fields.table().get(key), fields.Field(key), "must not be empty");
    }
    out = std::move(ref);
  }
  return Status::Ok();
}

}  // namespace egress::config
