// codegen/error_plot.cpp — see error_plot.h.
#include "codegen/error_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "codegen/literals.h"

namespace modelc {

namespace {

// Text for SVG: &, <, >, " escaped, control characters as '?', bytes that are not UTF-8 as U+FFFD.
std::string xml(const std::string& s) {
  std::string r;
  for (const char ch : valid_utf8(s)) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '&') r += "&amp;";
    else if (c == '<') r += "&lt;";
    else if (c == '>') r += "&gt;";
    else if (c == '"') r += "&quot;";
    else if (c < 0x20 || c == 0x7f) r += '?';
    else r += ch;
  }
  return r;
}

std::string num(double v, const char* format = "%.1f") {
  char b[64];
  std::snprintf(b, sizeof b, format, v);
  return b;
}

std::string cut(const std::string& s, std::size_t n) { return s.size() > n ? s.substr(0, n - 3) + "..." : s; }

}  // namespace

std::string layer_error_svg(const std::string& title, const std::vector<LayerError>& layers, double limit) {
  // Room on the right for the last layer's slanted name; the plot at least 640 wide, so the title
  // and the note above it fit.
  const double left = 70, right = 150, top = 50, plot_h = 300, bottom = 175;
  const std::size_t n = layers.size();
  const double step = n > 1 ? std::clamp(1200.0 / static_cast<double>(n - 1), 4.0, 64.0) : 64.0;
  const double plot_w = std::max(640.0, n > 1 ? step * static_cast<double>(n - 1) : 0.0);
  const double x0 = n > 1 ? (plot_w - step * static_cast<double>(n - 1)) / 2 : plot_w / 2;  // centred
  const double width = left + plot_w + right, height = top + plot_h + bottom;

  // The decades the axis spans: the finite, positive errors and the limit, at least 1e-6 .. 1e-1.
  double lo = 1e-6, hi = 1e-1;
  for (const LayerError& l : layers) {
    if (l.rel_l2 > 0 && std::isfinite(l.rel_l2)) {
      lo = std::min(lo, l.rel_l2);
      hi = std::max(hi, l.rel_l2);
    }
  }
  if (limit > 0) hi = std::max(hi, limit);
  const int d_lo = std::max(-16, static_cast<int>(std::floor(std::log10(lo)))),
            d_hi = std::min(16, static_cast<int>(std::ceil(std::log10(hi))));
  auto y_of = [&](double v) {
    const double t = v > 0 && std::isfinite(v) ? (std::log10(v) - d_lo) / std::max(1, d_hi - d_lo) : 0.0;
    return top + plot_h * (1 - std::clamp(t, 0.0, 1.0));
  };
  auto x_of = [&](std::size_t i) { return left + x0 + step * static_cast<double>(i); };

  std::string s = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  s += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width, "%.0f") + "\" height=\"" +
       num(height, "%.0f") + "\" viewBox=\"0 0 " + num(width, "%.0f") + " " + num(height, "%.0f") +
       "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"11\">\n";
  s += "<rect x=\"0\" y=\"0\" width=\"" + num(width, "%.0f") + "\" height=\"" + num(height, "%.0f") +
       "\" fill=\"#ffffff\"/>\n";
  s += "<text x=\"" + num(left) + "\" y=\"22\" font-size=\"14\" font-weight=\"bold\">" + xml(title) + "</text>\n";

  // The worst layer and the first above the limit, named under the title.
  std::size_t worst = 0, first_over = n;
  for (std::size_t i = 0; i < n; ++i) {
    const LayerError& l = layers[i];
    const bool over = l.nonfinite || (limit > 0 && l.rel_l2 > limit);
    if (over && first_over == n) first_over = i;
    if (l.nonfinite || (!layers[worst].nonfinite && l.rel_l2 > layers[worst].rel_l2)) worst = i;
  }
  std::string note = n ? "worst: layer " + std::to_string(worst) + " " + cut(layers[worst].label, 70) + " (" +
                             (layers[worst].nonfinite ? std::string("NaN/Inf") : num(layers[worst].rel_l2, "%.3g")) + ")"
                       : std::string("no layers");
  if (limit > 0) {
    note += first_over < n ? "; first above " + num(limit, "%.3g") + ": layer " + std::to_string(first_over)
                           : "; every layer at most " + num(limit, "%.3g");
  }
  s += "<text x=\"" + num(left) + "\" y=\"40\" fill=\"#444444\">" + xml(note) + "</text>\n";

  // Axes: a grid line per decade, labelled; the layer index every few layers.
  for (int d = d_lo; d <= d_hi; ++d) {
    const double y = top + plot_h * (1 - static_cast<double>(d - d_lo) / std::max(1, d_hi - d_lo));
    s += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + plot_w) + "\" y2=\"" + num(y) +
         "\" stroke=\"#e0e0e0\"/>\n";
    s += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y + 4) + "\" text-anchor=\"end\">1e" + std::to_string(d) +
         "</text>\n";
  }
  s += "<line x1=\"" + num(left) + "\" y1=\"" + num(top) + "\" x2=\"" + num(left) + "\" y2=\"" + num(top + plot_h) +
       "\" stroke=\"#000000\"/>\n";
  s += "<line x1=\"" + num(left) + "\" y1=\"" + num(top + plot_h) + "\" x2=\"" + num(left + plot_w) + "\" y2=\"" +
       num(top + plot_h) + "\" stroke=\"#000000\"/>\n";
  s += "<text transform=\"translate(16," + num(top + plot_h / 2) +
       ") rotate(-90)\" text-anchor=\"middle\">relative L2 error (against FP32)</text>\n";
  const std::size_t every = std::max<std::size_t>(1, static_cast<std::size_t>(std::ceil(40.0 / step)));
  for (std::size_t i = 0; i < n; i += every) {
    s += "<text x=\"" + num(x_of(i)) + "\" y=\"" + num(top + plot_h + 14) + "\" text-anchor=\"middle\">" +
         std::to_string(i) + "</text>\n";
  }
  s += "<text x=\"" + num(left + plot_w / 2) + "\" y=\"" + num(top + plot_h + 32) +
       "\" text-anchor=\"middle\">layer (node outputs in graph order)</text>\n";
  if (limit > 0) {
    const double y = y_of(limit);
    s += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + plot_w) + "\" y2=\"" + num(y) +
         "\" stroke=\"#d62728\" stroke-dasharray=\"6,4\"/>\n";
    s += "<text x=\"" + num(left + plot_w) + "\" y=\"" + num(y - 4) + "\" text-anchor=\"end\" fill=\"#d62728\">limit " +
         num(limit, "%.3g") + "</text>\n";
  }

  // The line through the finite errors, then a point per layer with its tooltip.
  std::string points;
  for (std::size_t i = 0; i < n; ++i) {
    if (layers[i].nonfinite) continue;
    points += (points.empty() ? "" : " ") + num(x_of(i)) + "," + num(y_of(layers[i].rel_l2));
  }
  if (!points.empty()) s += "<polyline points=\"" + points + "\" fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n";
  for (std::size_t i = 0; i < n; ++i) {
    const LayerError& l = layers[i];
    const std::string tip = "<title>" + std::to_string(i) + ": " + xml(l.label) + "  rel_l2 " +
                            (l.nonfinite ? std::string("NaN/Inf") : num(l.rel_l2, "%.3e")) + "  max_abs " +
                            num(l.max_abs, "%.3e") + "</title>";
    if (l.nonfinite) {
      const double x = x_of(i), y = top + 6;
      s += "<g stroke=\"#d62728\" stroke-width=\"2\">" + tip + "<line x1=\"" + num(x - 4) + "\" y1=\"" + num(y - 4) +
           "\" x2=\"" + num(x + 4) + "\" y2=\"" + num(y + 4) + "\"/><line x1=\"" + num(x - 4) + "\" y1=\"" +
           num(y + 4) + "\" x2=\"" + num(x + 4) + "\" y2=\"" + num(y - 4) + "\"/></g>\n";
      continue;
    }
    const bool over = limit > 0 && l.rel_l2 > limit;
    s += "<circle cx=\"" + num(x_of(i)) + "\" cy=\"" + num(y_of(l.rel_l2)) + "\" r=\"3\" fill=\"" +
         (over ? "#d62728" : "#1f77b4") + "\">" + tip + "</circle>\n";
  }
  // The worst layer's name beside its point, and below the axis the names of labelled layers.
  if (n) {
    const double wy = layers[worst].nonfinite ? top + 6 : y_of(layers[worst].rel_l2);
    const bool right_half = x_of(worst) > left + plot_w / 2;
    s += "<text x=\"" + num(x_of(worst) + (right_half ? -8 : 8)) + "\" y=\"" + num(wy - 8) + "\" text-anchor=\"" +
         (right_half ? "end" : "start") + "\" fill=\"#444444\">" + xml(cut(layers[worst].label, 60)) + "</text>\n";
  }
  for (std::size_t i = 0; i < n; i += every) {
    s += "<text transform=\"translate(" + num(x_of(i) + 3) + "," + num(top + plot_h + 44) +
         ") rotate(60)\" font-size=\"9\" fill=\"#666666\">" + xml(cut(layers[i].label, 24)) + "</text>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace modelc
