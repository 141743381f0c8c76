// Peers: other libraries' attention (torch SDPA, FlexAttention, FlashInfer) measured by the peer
// runner (tools/peers/, Python) on a batch `attn-bench workload dump` wrote, and recorded beside
// our variants as variants named `peer.<library>.<kernel>` (docs/peers.md).
//
// The runner writes a results file (JSON lines: a header, then one line per peer with its
// disposition, raw timing samples and verification numbers). This module reads it strictly and
// turns each line into a Measurement with the C++ code that makes ours: the verdict comes from
// tuner/verify's rule and tolerance, the statistics, noise, outliers and stability from the raw
// samples (results/measurement.hpp, base/sample_statistics.hpp, measure/timing_core.hpp). The
// runner's own verdict and noise only decided whether and how long it timed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/registry.hpp"
#include "measure/timing_policy.hpp"
#include "results/measurement.hpp"
#include "results/records.hpp"
#include "results/variant_names.hpp"
#include "workloads/batch.hpp"

namespace attn {

inline constexpr const char* kPeerResultsFormat = "attn-bench peer results";

struct PeerResultsHeader {
  std::string spec_hash;
  std::string workload;
  nlohmann::json spec;       // the dump's canonical spec, as the runner copied it
  std::string output_dtype;  // "bf16", "fp16"
  std::string reference;     // the oracle of the dump's reference_out
  MeasurePolicy policy;      // the fields the runner timed with; name as recorded
  nlohmann::json device;     // {"kind": "gpu", "index", "name", "uuid", ...} or {"kind": "cpu"}
  nlohmann::json runner;     // versions: python, numpy, torch, ...
  std::string device_kind() const { return device.value("kind", ""); }
  std::string device_uuid() const { return device.value("uuid", ""); }
};

// One peer line, already a Measurement except for what depends on our side: family, bytes, flops
// and the ceiling (apply_peer_work).
struct PeerRow {
  std::string library;
  Measurement measurement;
};

struct PeerResults {
  PeerResultsHeader header;
  std::vector<PeerRow> rows;
};

// Reads and checks a results file; an unreadable, malformed or inconsistent file is an InputError
// (exit 3) listing each problem as "line N: /field: rule".
PeerResults read_peer_results(const std::string& path);
PeerResults parse_peer_results(std::string_view text, const std::string& source);

// The canonical JSON of the header's spec and a check that it hashes to spec_hash: what the
// workloads table holds for this workload, so that peers land on the row `attn-bench run` writes.
// InputError when the two disagree.
WorkloadRecord peer_workload_record(const PeerResultsHeader& header, const std::string& source);

// The family whose work model (minimum bytes, useful FLOPs) and roofline bound peers of this batch
// are given: blocksparse for a block-sparse layout, paged_decode for a decode batch, flash_fwd for
// dense attention flash_fwd serves (no context), else prefix_prefill.
Family peer_family(const Batch& batch, const Registry& registry);
// Sets family, bytes (logical and unique) and flops of a peer measurement from that family's work
// model: peers are set against the same byte and FLOP counts as our variants.
void apply_peer_work(const Batch& batch, const Registry& registry, Measurement& measurement);

}  // namespace attn
