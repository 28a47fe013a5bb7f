// A roofline plot as a standalone SVG file, written by hand (svg_chart.h's style): arithmetic
// intensity (FLOP per byte moved) across, performance (FLOP/s) up, both logarithmic, under the
// machine's two roofs (measure/ceilings.h): the memory roof, bandwidth x intensity, rising to
// the ridge, then the flat compute roof. Every op is a point at (F / B, F / t); its height
// under the roof above it is how much of the machine it leaves unused.
//
// Points are coloured by series (one colour per attention backend, grey for the other ops of a
// model) and drawn filled or hollow (a profile's prefill and decode steps), each with its label.
// Points without FLOPs or bytes (pure copies: split_qkv, merge_heads) have no place on the plot;
// a line under it names them. Cost: O(points).
#pragma once

#include <string>
#include <vector>

namespace attnscope::cli {

struct RooflinePoint {
  std::string label;    // "linear", "attention.naive"
  std::string series;   // its colour: "naive", "flash", "other ops", ...
  bool hollow = false;  // drawn as a ring (decode) instead of a disc (prefill)
  double flops = 0;
  double bytes = 0;
  double seconds = 0;
};

struct Roofs {
  double flops_per_s = 0;  // the compute roof
  double bytes_per_s = 0;  // the memory roof
  std::string caption;     // how they were measured, printed under the plot
};

// `legend_note` explains the markers ("filled: prefill, hollow: decode"), "" for none.
std::string roofline_svg(const std::string& title, const Roofs& roofs,
                         const std::vector<RooflinePoint>& points, const std::string& legend_note);

}  // namespace attnscope::cli
