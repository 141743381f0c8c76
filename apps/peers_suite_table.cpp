#include "apps/peers_suite_table.hpp"

#include <algorithm>

#include "base/sample_statistics.hpp"
#include "results/table.hpp"
#include "results/variant_names.hpp"

namespace attn {

namespace {

bool passed(const BenchRow& row) {
  return row.measurement.disposition == Disposition::passed;
}

// The fastest passed row of `rows` that `pick` accepts; null when none passed.
template <typename Pick>
const BenchRow* fastest_passed(const std::vector<BenchRow>& rows, Pick pick) {
  const BenchRow* best = nullptr;
  for (const BenchRow& row : rows) {
    if (pick(row) && passed(row) &&
        (!best || row.measurement.stats.median < best->measurement.stats.median)) {
      best = &row;
    }
  }
  return best;
}

// A peer's cell on one workload: its median when a run of it passed (a peer with configs runs
// several times), else what became of its first run that was not declined, else "unsupported";
// "-" when it did not run there at all.
std::string peer_cell(const std::vector<BenchRow>& rows, const std::string& peer) {
  const auto named = [&](const BenchRow& row) { return row.full_name == peer; };
  if (const BenchRow* best = fastest_passed(rows, named)) {
    return format("%.2f", best->measurement.stats.median);
  }
  std::string cell = "-";
  for (const BenchRow& row : rows) {
    if (!named(row)) continue;
    if (row.measurement.disposition != Disposition::unsupported) {
      return to_string(row.measurement.disposition);
    }
    cell = to_string(Disposition::unsupported);
  }
  return cell;
}

}  // namespace

void print_peers_suite_table(const std::string& suite,
                             const std::vector<PeersSuiteWorkload>& workloads, std::ostream& out) {
  const auto is_peer = [](const BenchRow& row) { return is_peer_variant(row.full_name); };
  const auto is_ours = [](const BenchRow& row) { return !is_peer_variant(row.full_name); };
  // A column for each peer that was not declined on some workload, in the order the peers ran.
  std::vector<std::string> columns, declined;
  for (const PeersSuiteWorkload& w : workloads) {
    for (const BenchRow& row : w.rows) {
      if (!is_peer(row)) continue;
      std::vector<std::string>& list =
          row.measurement.disposition == Disposition::unsupported ? declined : columns;
      if (std::find(list.begin(), list.end(), row.full_name) == list.end()) {
        list.push_back(row.full_name);
      }
    }
  }
  declined.erase(std::remove_if(declined.begin(), declined.end(),
                                [&](const std::string& name) {
                                  return std::find(columns.begin(), columns.end(), name) !=
                                         columns.end();
                                }),
                 declined.end());

  TextTable table;
  using A = TextTable::Align;
  table.add_column("workload", A::left);
  table.add_column("ours", A::left);
  table.add_column("ours_us", A::right);
  for (const std::string& peer : columns) table.add_column(peer, A::right);
  table.add_column("fastest peer", A::left);
  table.add_column("peer/ours", A::right);
  size_t with_ours = 0, with_peer = 0;
  for (const PeersSuiteWorkload& w : workloads) {
    const BenchRow* ours = fastest_passed(w.rows, is_ours);
    const BenchRow* peer = fastest_passed(w.rows, is_peer);
    with_ours += ours != nullptr;
    with_peer += peer != nullptr;
    std::vector<std::string> cells = {w.workload, ours ? ours->full_name : "-",
                                      ours ? format("%.2f", ours->measurement.stats.median) : "-"};
    for (const std::string& name : columns) cells.push_back(peer_cell(w.rows, name));
    cells.push_back(peer ? peer->full_name : "-");
    std::string ratio = "-";
    if (ours && peer) {
      const Comparison c =
          compare_samples(ours->measurement.kept_samples(), peer->measurement.kept_samples());
      ratio = format("%.3gx %s", peer->measurement.stats.median / ours->measurement.stats.median,
                     to_string(c.verdict).c_str());
    }
    cells.push_back(ratio);
    table.add_row(std::move(cells));
  }
  out << "\nsuite     " << suite << ": ours and the peers, one row per workload (median us)\n";
  table.print(out);
  if (!declined.empty()) {
    std::string names;
    for (const std::string& name : declined) names += (names.empty() ? "" : ", ") + name;
    out << "\ndeclined on every workload (each workload's table says why): " << names << "\n";
  }
  out << "\n'peer/ours': the median of the fastest passed peer / the median of our fastest passed "
         "variant (> 1: ours is faster), and the verdict of their 95% intervals (FASTER: the peer "
         "is faster than ours)\n";
  out << "\nsuite     " << suite << ": " << with_ours << " of " << workloads.size()
      << " workloads with a passing variant of ours, " << with_peer << " with a passing peer\n";
}

}  // namespace attn
