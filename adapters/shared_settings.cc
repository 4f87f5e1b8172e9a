#include "adapters/shared_settings.h"

#include <utility>
#include <vector>

namespace egress::adapters {

void SharedSettings::Put(const std::string& name, const std::string& text, Done done) {
  Pending& p = pending_[name];
  p.text = text;
  p.generation = ++generation_;
  if (p.sending) {
    // One Send at a time per name, so they land in order: this text follows when the one in
    // flight has answered (at the next poll).
    if (done) {
      done(Status::Ok());
    }
    return;
  }
  SendPending(name, std::move(done));
}

void SharedSettings::SendPending(const std::string& name, Done done) {
  Pending& p = pending_.at(name);
  p.sending = true;
  const uint64_t generation = p.generation;
  std::weak_ptr<bool> alive = alive_;
  Send(name, p.text, [this, alive, name, generation, done = std::move(done)](Status status) {
    if (!alive.expired()) {
      auto it = pending_.find(name);
      if (it != pending_.end()) {
        it->second.sending = false;
        if (status.ok() && it->second.generation == generation) {
          pending_.erase(it);
        }
      }
    }
    if (done) {
      done(status);
    }
  });
}

void SharedSettings::Flush() {
  std::vector<std::string> names;
  for (const auto& [name, p] : pending_) {
    if (!p.sending) {
      names.push_back(name);
    }
  }
  for (const std::string& name : names) {
    SendPending(name, nullptr);
  }
}

}  // namespace egress::adapters
