#pragma once

#include <utility>

#include <tl/expected.hpp>

#include "dispatcher/base/check.h"
#include "dispatcher/base/status.h"

namespace egress {

// A value or the Status saying why there is none. `return Status::NotFound(...)` converts
// implicitly; a Result must never hold an OK Status as its error. std::expected replaces
// tl::expected at C++23.
template <class T>
class [[nodiscard]] Result : public tl::expected<T, Status> {
 public:
  using Base = tl::expected<T, Status>;
  using Base::Base;

  Result(Status status)  // NOLINT(google-explicit-constructor)
      : Base(tl::unexpect, std::move(status)) {
    EGRESS_CHECK(!this->error().ok());
  }

  // The error, or OK when a value is held.
  Status status() const { return this->has_value() ? Status::Ok() : this->error(); }
};

}  // namespace egress
