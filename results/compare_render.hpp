// attn-tune compare's output: the CompareResult (results/compare.hpp) as markdown tables or as
// JSON. Pure formatting of plain values: the same result always gives the same text.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "results/compare.hpp"

namespace attn {

// The sides, the method in one paragraph, a table of times and verdicts, a table of best configs,
// and the summary. Headings start at `level` ('#' * level); the report embeds it at level 3.
std::string compare_markdown(const CompareResult& result, int level = 1);

// Every number of the markdown, unrounded; absent values are null.
nlohmann::json compare_json(const CompareResult& result);

// Text for a markdown table cell: '|' escaped (it would end the cell), line breaks as spaces.
std::string markdown_cell(const std::string& text);

// "1.227x [1.210, 1.241]": a speed-up and its interval.
std::string format_speedup(const RatioInterval& speedup);

}  // namespace attn
