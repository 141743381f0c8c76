// Read-only listings of the store for attn-tune compare and report: every device and every run.
// Each row is read by the store's own single-row readers (Store::device, Store::run), so the
// column lists live in one place.
#include "base/errors.hpp"
#include "results/sqlite.hpp"
#include "results/store.hpp"

namespace attn {

std::vector<StoredDevice> Store::devices() const {
  Statement s(*db_, "SELECT id, fingerprint, first_seen_at, last_seen_at FROM devices ORDER BY id");
  std::vector<StoredDevice> out;
  while (s.step()) {
    StoredDevice d;
    d.id = s.column_int64(0);
    d.fingerprint = s.column_text(1);
    d.first_seen_at = s.column_text(2);
    d.last_seen_at = s.column_text(3);
    out.push_back(std::move(d));
  }
  for (StoredDevice& d : out) {
    std::optional<DeviceRecord> record = device(d.id);
    ATTN_ASSERT(record.has_value(), "device " + std::to_string(d.id) + " vanished while listed");
    d.record = std::move(*record);
  }
  return out;
}

std::vector<StoredRun> Store::runs() const {
  Statement s(*db_, "SELECT id FROM runs ORDER BY id");
  std::vector<int64_t> ids;
  while (s.step()) ids.push_back(s.column_int64(0));
  std::vector<StoredRun> out;
  out.reserve(ids.size());
  for (int64_t id : ids) {
    std::optional<StoredRun> row = run(id);
    ATTN_ASSERT(row.has_value(), "run " + std::to_string(id) + " vanished while listed");
    out.push_back(std::move(*row));
  }
  return out;
}

}  // namespace attn
