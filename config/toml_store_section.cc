#include <string>

#include "config/toml_sections.h"

namespace egress::config {

Status ReadStoreSection(const TomlFields& store, StoreBackendOptions& out) {
  Status status = store.CheckKeys({"backend", "url", "password_file", "password_env", "pool_size",
                                   "memtable_mb", "block_cache_mb"});
  if (!status.ok()) {
    return status;
  }
  std::string backend;
  if (status = store.ReadString("backend", backend); !status.ok()) {
    return status;
  }
  if (store.Has("backend")) {
    if (backend == "rocksdb") {
      out.backend = StoreBackend::kRocksDb;
    } else if (backend == "postgres") {
      out.backend = StoreBackend::kPostgres;
    } else {
      return store.Error(*store.table().get("backend"), store.Field("backend"),
                         "must be \"rocksdb\" or \"postgres\"");
    }
  }
  // The URL may hold a password: read as a secret (never echoed in an error).
  if (store.Has("url")) {
    if (status = store.ReadSecret("url", out.url); !status.ok()) {
      return status;
    }
  }
  if (status = ReadSecretRefField(store, "password", out.password_ref); !status.ok()) {
    return status;
  }
  if (out.password_ref) {
    Result<std::string> password = adapters::ReadSecretRef(*out.password_ref);
    if (!password) {
      const std::string key = out.password_ref->kind == adapters::SecretRef::Kind::kFile
                                  ? "password_file"
                                  : "password_env";
      return store.Error(*store.table().get(key), store.Field(key), password.error().message());
    }
    out.password = std::move(*password);
  }
  if (status = store.ReadInt("pool_size", 1, 256, out.pool_size); !status.ok()) {
    return status;
  }
  if (status = store.ReadInt("memtable_mb", 16, 4096, out.memtable_mb); !status.ok()) {
    return status;
  }
  if (status = store.ReadInt("block_cache_mb", 0, 65536, out.block_cache_mb); !status.ok()) {
    return status;
  }
  if (out.backend == StoreBackend::kPostgres && out.url.empty()) {
    return store.TableError("store.url", "is required with backend = \"postgres\"");
  }
  return Status::Ok();
}

}  // namespace egress::config
