// compiler/ops/rnn.cpp — LSTM, GRU and RNN (opsets 7, 14) and their recurrence forms (domain
// "modelc", made by passes/split_recurrence): attributes, shape rules, reference evaluation.
//
// Semantics (the ONNX spec; where it is silent, as ONNX Runtime does): gates in the spec's order
// (LSTM i, o, f, c; GRU z, r, h), biases Wb + Rb, 'clip' applied to each gate's pre-activation
// after every term is added (peepholes included), LSTM 'input_forget' f = 1 - i, GRU
// 'linear_before_reset'. activation_alpha / activation_beta are consumed in the order of the
// activations that take them; an activation without a value gets its ONNX op's default.
// sequence_lens[b] (clipped to [0, seq_length]) steps run for batch item b (a reverse direction
// from step sequence_lens[b] - 1 down to 0); Y is 0 at the steps past it, and Y_h / Y_c hold the
// state after its last step (the initial state for a length of 0).
//
// FP16: Precision::fp32_compute (FP16 storage, the state and the gates in FP32 inside the kernel).
#include "ops/rnn.h"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "ops/common.h"

namespace modelc::ops {
namespace {

using Act = RnnActivation;

struct ActInfo {
  const char* name;
  Act::Kind kind;
  bool alpha, beta;
  double default_alpha, default_beta;
};

const ActInfo kActs[] = {
    {"Relu", Act::Kind::relu, false, false, 0, 0},
    {"Tanh", Act::Kind::tanh, false, false, 0, 0},
    {"Sigmoid", Act::Kind::sigmoid, false, false, 0, 0},
    {"Affine", Act::Kind::affine, true, true, 1.0, 0.0},
    {"LeakyRelu", Act::Kind::leaky_relu, true, false, 0.01, 0},
    {"ThresholdedRelu", Act::Kind::thresholded_relu, true, false, 1.0, 0},
    {"ScaledTanh", Act::Kind::scaled_tanh, true, true, 1.0, 1.0},
    {"HardSigmoid", Act::Kind::hard_sigmoid, true, true, 0.2, 0.5},
    {"Elu", Act::Kind::elu, true, false, 1.0, 0},
    {"Softsign", Act::Kind::softsign, false, false, 0, 0},
    {"Softplus", Act::Kind::softplus, false, false, 0, 0},
};

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

const ActInfo* find_act(const std::string& name) {
  for (const ActInfo& a : kActs) {
    if (lower(a.name) == lower(name)) return &a;
  }
  return nullptr;
}

std::vector<std::string> default_activations(RnnCell c) {
  switch (c) {
    case RnnCell::lstm: return {"Sigmoid", "Tanh", "Tanh"};
    case RnnCell::gru: return {"Sigmoid", "Tanh"};
    case RnnCell::rnn: break;
  }
  return {"Tanh"};
}

const char* cell_name(RnnCell c) { return c == RnnCell::lstm ? "LSTM" : c == RnnCell::gru ? "GRU" : "RNN"; }

bool present(const Node& n, int i) { return n.has_input(i); }

void require_shape(const Node& n, int i, const char* what, const Shape& want, const std::string& form) {
  if (!present(n, i)) return;
  const Shape& s = n.input(i).shape();
  if (s != want) {
    throw n.error(std::string(what) + " ('" + n.input(i).name() + "') has shape " + shape_str(s) + ", expected " +
                  shape_str(want) + " (" + form + ")");
  }
}

// ---- shape rule ---------------------------------------------------------------------------------

void infer_rnn(Node& n) {
  const RnnParams p = rnn_params(n);
  const DType t = n.input(0).dtype();
  const int64_t D = p.directions, S = p.seq, B = p.batch, H = p.hidden;
  if (n.has_output(0)) n.output(0).set_type(t, p.layout == 0 ? Shape{S, D, B, H} : Shape{B, S, D, H});
  const Shape state = p.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
  if (n.has_output(1)) n.output(1).set_type(t, state);
  if (n.has_output(2)) n.output(2).set_type(t, state);
}

// ---- reference ----------------------------------------------------------------------------------

std::vector<double> f64_or(const Tensor* t, std::size_t n) { return t ? t->to_f64() : std::vector<double>(n, 0.0); }

std::vector<Tensor> eval_rnn(const Node& n, const TensorRefs& in) {
  const RnnParams p = rnn_params(n);
  const int64_t D = p.directions, S = p.seq, B = p.batch, H = p.hidden, G = p.gates, GH = G * H;
  const bool lstm = p.cell == RnnCell::lstm, gru = p.cell == RnnCell::gru;
  auto at = [](int64_t i) { return static_cast<std::size_t>(i); };
  // xw[((d * S + t) * B + b) * GH + j]: X_t * W^T for every direction, step and batch item.
  std::vector<double> xw(at(D * S * B * GH), 0.0);
  if (p.projected) {
    const std::vector<double> v = in[RnnParams::kX]->to_f64();  // [D, S, B, GH] or [D, B, S, GH]
    for (int64_t d = 0; d < D; ++d)
      for (int64_t t = 0; t < S; ++t)
        for (int64_t b = 0; b < B; ++b)
          for (int64_t j = 0; j < GH; ++j) {
            const int64_t src = p.layout == 0 ? ((d * S + t) * B + b) * GH + j : ((d * B + b) * S + t) * GH + j;
            xw[at(((d * S + t) * B + b) * GH + j)] = v[at(src)];
          }
  } else {
    const std::vector<double> x = in[RnnParams::kX]->to_f64(), w = in[RnnParams::kW]->to_f64();
    const int64_t I = p.input;
    for (int64_t d = 0; d < D; ++d)
      for (int64_t t = 0; t < S; ++t)
        for (int64_t b = 0; b < B; ++b) {
          const double* xr = x.data() + (p.layout == 0 ? (t * B + b) * I : (b * S + t) * I);
          for (int64_t j = 0; j < GH; ++j) {
            const double* wr = w.data() + (d * GH + j) * I;
            double s = 0;
            for (int64_t i = 0; i < I; ++i) s += xr[i] * wr[i];
            xw[at(((d * S + t) * B + b) * GH + j)] = s;
          }
        }
  }
  const std::vector<double> r = in[RnnParams::kR]->to_f64();
  const Tensor* bias = in.size() > RnnParams::kB ? in[RnnParams::kB] : nullptr;
  const std::vector<double> bv = f64_or(bias, at(D * 2 * GH));
  const Tensor* lens_t = in.size() > RnnParams::kSeqLens ? in[RnnParams::kSeqLens] : nullptr;
  const std::vector<int64_t> lens = lens_t ? lens_t->to_i64() : std::vector<int64_t>(at(B), S);
  const Tensor* h0_t = in.size() > RnnParams::kInitialH ? in[RnnParams::kInitialH] : nullptr;
  const Tensor* c0_t = lstm && in.size() > RnnParams::kInitialC ? in[RnnParams::kInitialC] : nullptr;
  const Tensor* p_t = lstm && in.size() > RnnParams::kP ? in[RnnParams::kP] : nullptr;
  const std::vector<double> h0 = f64_or(h0_t, at(D * B * H)), c0 = f64_or(c0_t, at(D * B * H));
  const std::vector<double> peep = f64_or(p_t, at(D * 3 * H));
  auto state_at = [&](int64_t d, int64_t b) { return p.layout == 0 ? (d * B + b) * H : (b * D + d) * H; };
  auto y_at = [&](int64_t t, int64_t d, int64_t b) {
    return p.layout == 0 ? ((t * D + d) * B + b) * H : ((b * S + t) * D + d) * H;
  };
  std::vector<double> y(at(S * D * B * H), 0.0), yh(at(D * B * H), 0.0), yc(at(D * B * H), 0.0);
  auto clip = [&](double v) { return p.has_clip ? std::clamp(v, -p.clip, p.clip) : v; };

  for (int64_t d = 0; d < D; ++d) {
    const bool rev = p.reverse || d == 1;
    const std::vector<Act>& act = p.activations[at(d)];
    const double* R = r.data() + d * GH * H;
    const double* wb = bv.data() + d * 2 * GH;
    const double* rb = wb + GH;
    const double* P = peep.data() + d * 3 * H;
    for (int64_t b = 0; b < B; ++b) {
      const int64_t len = std::clamp<int64_t>(lens[at(b)], 0, S);
      std::vector<double> h(h0.begin() + state_at(d, b), h0.begin() + state_at(d, b) + H);
      std::vector<double> c(c0.begin() + state_at(d, b), c0.begin() + state_at(d, b) + H);
      std::vector<double> pre(at(GH)), hn(at(H));
      for (int64_t step = 0; step < len; ++step) {
        const int64_t t = rev ? len - 1 - step : step;
        const double* xr = xw.data() + ((d * S + t) * B + b) * GH;
        for (int64_t j = 0; j < GH; ++j) {
          pre[at(j)] = xr[j] + wb[j];
          if (gru && j >= 2 * H) continue;  // the h gate's recurrent term below
          double s = rb[j];
          for (int64_t k = 0; k < H; ++k) s += R[j * H + k] * h[at(k)];
          pre[at(j)] += s;
        }
        if (lstm) {
          for (int64_t u = 0; u < H; ++u) {
            const double ig = apply(act[0], clip(pre[at(u)] + P[u] * c[at(u)]));
            const double fg = p.input_forget ? 1.0 - ig : apply(act[0], clip(pre[at(2 * H + u)] + P[2 * H + u] * c[at(u)]));
            const double cg = apply(act[1], clip(pre[at(3 * H + u)]));
            c[at(u)] = fg * c[at(u)] + ig * cg;
            const double og = apply(act[0], clip(pre[at(H + u)] + P[H + u] * c[at(u)]));
            hn[at(u)] = og * apply(act[2], c[at(u)]);
          }
        } else if (gru) {
          std::vector<double> z(at(H)), rg(at(H));
          for (int64_t u = 0; u < H; ++u) {
            z[at(u)] = apply(act[0], clip(pre[at(u)]));
            rg[at(u)] = apply(act[0], clip(pre[at(H + u)]));
          }
          for (int64_t u = 0; u < H; ++u) {
            const double* Rh = R + (2 * H + u) * H;
            double s = 0;
            if (p.linear_before_reset) {
              for (int64_t k = 0; k < H; ++k) s += Rh[k] * h[at(k)];
              s = rg[at(u)] * (s + rb[2 * H + u]);
            } else {
              for (int64_t k = 0; k < H; ++k) s += Rh[k] * rg[at(k)] * h[at(k)];
              s += rb[2 * H + u];
            }
            const double hh = apply(act[1], clip(pre[at(2 * H + u)] + s));
            hn[at(u)] = (1.0 - z[at(u)]) * hh + z[at(u)] * h[at(u)];
          }
        } else {
          for (int64_t u = 0; u < H; ++u) hn[at(u)] = apply(act[0], clip(pre[at(u)]));
        }
        h = hn;
        std::copy(h.begin(), h.end(), y.begin() + y_at(t, d, b));
      }
      std::copy(h.begin(), h.end(), yh.begin() + state_at(d, b));
      std::copy(c.begin(), c.end(), yc.begin() + state_at(d, b));
    }
  }
  const DType dt = in[RnnParams::kX]->dtype();
  const Shape state = p.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
  std::vector<Tensor> out;
  out.push_back(Tensor::from_f64(dt, p.layout == 0 ? Shape{S, D, B, H} : Shape{B, S, D, H}, y));
  out.push_back(Tensor::from_f64(dt, state, yh));
  if (lstm) out.push_back(Tensor::from_f64(dt, state, yc));
  return out;
}

int64_t rnn_flops(const Node& n) {
  const RnnParams p = rnn_params(n);
  const int64_t steps = p.directions * p.seq * p.batch;
  return 2 * steps * p.gates * p.hidden * (p.input + p.hidden) + 10 * steps * p.gates * p.hidden;
}

// ---- registration -------------------------------------------------------------------------------

std::vector<std::string> attrs_of(RnnCell c, int opset, bool projected) {
  std::vector<std::string> a{"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size"};
  if (c == RnnCell::lstm) a.push_back("input_forget");
  if (c == RnnCell::gru) a.push_back("linear_before_reset");
  if (opset >= 14 || projected) a.push_back("layout");
  return a;
}

void validate_rnn(const Node& n) {
  for (int i : {RnnParams::kX, RnnParams::kW, RnnParams::kR, RnnParams::kB, RnnParams::kInitialH,
                RnnParams::kInitialC, RnnParams::kP}) {
    if (n.has_input(i) && n.input(i).has_type()) require_dtype(n, i, {DType::float32, DType::float16, DType::bfloat16});
  }
  if (n.has_input(RnnParams::kSeqLens) && n.input(RnnParams::kSeqLens).has_type()) {
    require_dtype(n, RnnParams::kSeqLens, {DType::int32});
  }
}

}  // namespace

std::string RnnActivation::name() const {
  for (const ActInfo& a : kActs) {
    if (a.kind == kind) return a.name;
  }
  return "?";
}

double apply(const RnnActivation& a, double x) {
  using K = RnnActivation::Kind;
  switch (a.kind) {
    case K::relu: return x > 0 ? x : 0.0;
    case K::tanh: return std::tanh(x);
    case K::sigmoid: return 1.0 / (1.0 + std::exp(-x));
    case K::affine: return a.alpha * x + a.beta;
    case K::leaky_relu: return x >= 0 ? x : a.alpha * x;
    case K::thresholded_relu: return x > a.alpha ? x : 0.0;
    case K::scaled_tanh: return a.alpha * std::tanh(a.beta * x);
    case K::hard_sigmoid: return std::clamp(a.alpha * x + a.beta, 0.0, 1.0);
    case K::elu: return x >= 0 ? x : a.alpha * (std::exp(x) - 1.0);
    case K::softsign: return x / (1.0 + std::fabs(x));
    case K::softplus: return std::log1p(std::exp(-std::fabs(x))) + std::max(x, 0.0);
  }
  return x;
}

RnnCell rnn_cell(const std::string& op) {
  if (op == "LSTM" || op == "LSTMRecurrence") return RnnCell::lstm;
  if (op == "GRU" || op == "GRURecurrence") return RnnCell::gru;
  return RnnCell::rnn;
}

const char* recurrence_op(RnnCell cell) {
  return cell == RnnCell::lstm ? "LSTMRecurrence" : cell == RnnCell::gru ? "GRURecurrence" : "RNNRecurrence";
}

RnnParams rnn_params(const Node& n) {
  RnnParams p;
  p.cell = rnn_cell(n.op());
  p.projected = n.domain() == kModelcDomain;
  p.gates = p.cell == RnnCell::lstm ? 4 : p.cell == RnnCell::gru ? 3 : 1;
  const std::string dir = n.attr_string("direction", "forward");
  if (dir == "bidirectional") {
    p.directions = 2;
  } else if (dir == "reverse") {
    p.reverse = true;
  } else if (dir != "forward") {
    throw n.error("attribute 'direction' is '" + dir + "', expected forward, reverse or bidirectional");
  }
  p.layout = n.attr_int("layout", 0);
  if (p.layout != 0 && p.layout != 1) {
    throw n.error("attribute 'layout' is " + std::to_string(p.layout) + ", expected 0 or 1");
  }
  p.has_clip = n.has_attr("clip");
  p.clip = n.attr_float("clip", 0.0);
  if (p.has_clip && !(p.clip > 0)) {
    throw n.error("attribute 'clip' is " + std::to_string(p.clip) + ", expected a positive threshold");
  }
  p.input_forget = n.attr_int("input_forget", 0) != 0;
  p.linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;

  // Activations: per_direction() of them per direction; alpha and beta consumed in order by the
  // activations that take them.
  std::vector<std::string> names = default_activations(p.cell);
  if (p.directions == 2) {
    const std::vector<std::string> one = names;
    names.insert(names.end(), one.begin(), one.end());
  }
  if (n.has_attr("activations")) {
    const Attribute* a = n.attr("activations");
    if (a->kind != Attribute::Kind::strings) throw n.error("attribute 'activations' must be a list of strings");
    names = a->strings;
  }
  const std::size_t want = static_cast<std::size_t>(p.per_direction() * p.directions);
  if (names.size() != want) {
    throw n.error("attribute 'activations' has " + std::to_string(names.size()) + " names, expected " +
                  std::to_string(want) + " (" + std::to_string(p.per_direction()) + " per direction for " +
                  cell_name(p.cell) + ", " + std::to_string(p.directions) + " direction" +
                  (p.directions > 1 ? "s" : "") + ")");
  }
  const std::vector<double> alphas = n.attr_floats("activation_alpha"), betas = n.attr_floats("activation_beta");
  std::size_t ai = 0, bi = 0;
  p.activations.assign(static_cast<std::size_t>(p.directions), {});
  for (std::size_t k = 0; k < names.size(); ++k) {
    const ActInfo* info = find_act(names[k]);
    if (!info) {
      throw n.error("activation '" + names[k] + "' is not one of the recurrent activations (Relu, Tanh, Sigmoid, "
                    "Affine, LeakyRelu, ThresholdedRelu, ScaledTanh, HardSigmoid, Elu, Softsign, Softplus)");
    }
    RnnActivation act;
    act.kind = info->kind;
    act.alpha = info->alpha && ai < alphas.size() ? alphas[ai++] : info->default_alpha;
    act.beta = info->beta && bi < betas.size() ? betas[bi++] : info->default_beta;
    p.activations[k / static_cast<std::size_t>(p.per_direction())].push_back(act);
  }

  // Shapes.
  const int D = static_cast<int>(p.directions);
  if (!n.has_input(RnnParams::kR)) throw n.error("input R is required");
  const Shape& r = n.input(RnnParams::kR).shape();
  if (r.size() != 3) throw n.error("input R ('" + n.input(RnnParams::kR).name() + "') has shape " + shape_str(r) + ", expected rank 3 [num_directions, gates * hidden_size, hidden_size]");
  p.hidden = n.has_attr("hidden_size") ? n.attr_int("hidden_size", 0) : r[2];
  if (p.hidden < 1) throw n.error("attribute 'hidden_size' is " + std::to_string(p.hidden) + ", expected 1 or more");
  const int64_t H = p.hidden, GH = p.gates * H;
  require_shape(n, RnnParams::kR, "R", {D, GH, H}, "[num_directions, " + std::to_string(p.gates) + " * hidden_size, hidden_size]");
  const Shape& x = n.input(RnnParams::kX).shape();
  if (p.projected) {
    if (n.has_input(RnnParams::kW)) throw n.error("internal: the recurrence form takes no W (input 1)");
    if (x.size() != 4 || x[0] != D || x[3] != GH) {
      throw n.error("input XW ('" + n.input(0).name() + "') has shape " + shape_str(x) + ", expected [" +
                    std::to_string(D) + ", " + (p.layout == 0 ? "seq_length, batch_size, " : "batch_size, seq_length, ") +
                    std::to_string(GH) + "]");
    }
    p.seq = p.layout == 0 ? x[1] : x[2];
    p.batch = p.layout == 0 ? x[2] : x[1];
  } else {
    if (x.size() != 3) {
      throw n.error("input X ('" + n.input(0).name() + "') has shape " + shape_str(x) + ", expected rank 3 (" +
                    (p.layout == 0 ? "[seq_length, batch_size, input_size])" : "[batch_size, seq_length, input_size])"));
    }
    p.seq = p.layout == 0 ? x[0] : x[1];
    p.batch = p.layout == 0 ? x[1] : x[0];
    p.input = x[2];
    if (!n.has_input(RnnParams::kW)) throw n.error("input W is required");
    require_shape(n, RnnParams::kW, "W", {D, GH, p.input},
                  "[num_directions, " + std::to_string(p.gates) + " * hidden_size, input_size]");
  }
  const int64_t B = p.batch;
  require_shape(n, RnnParams::kB, "B", {D, 2 * GH}, "[num_directions, 2 * " + std::to_string(p.gates) + " * hidden_size]");
  require_shape(n, RnnParams::kSeqLens, "sequence_lens", {B}, "[batch_size]");
  const Shape state = p.layout == 0 ? Shape{D, B, H} : Shape{B, D, H};
  const std::string state_form = p.layout == 0 ? "[num_directions, batch_size, hidden_size]" : "[batch_size, num_directions, hidden_size]";
  require_shape(n, RnnParams::kInitialH, "initial_h", state, state_form);
  if (p.cell == RnnCell::lstm) {
    require_shape(n, RnnParams::kInitialC, "initial_c", state, state_form);
    require_shape(n, RnnParams::kP, "P", {D, 3 * H}, "[num_directions, 3 * hidden_size]");
  }
  if (p.seq < 1 || B < 1) {
    throw n.error("X has " + std::to_string(p.seq) + " steps of batch " + std::to_string(B) + ": nothing to run",
                  "the sequence and the batch must not be empty");
  }
  return p;
}

MODELC_REGISTER_OP(LSTM)
    .since(7)
    .attrs(attrs_of(RnnCell::lstm, 7, false))
    .inputs(3, 8).outputs(0, 3).validate(validate_rnn).infer(infer_rnn).eval(eval_rnn)
    .precision(Precision::fp32_compute).kernel("rnn").family("rnn").flops(rnn_flops)
    .doc("long short-term memory over a sequence: every direction, activation, clip, peepholes, input_forget, "
         "sequence_lens; the input projection as one product (split_recurrence), the steps in one kernel");
MODELC_REGISTER_OP(LSTM)
    .since(14)
    .attrs(attrs_of(RnnCell::lstm, 14, false))
    .inputs(3, 8).outputs(0, 3).validate(validate_rnn).infer(infer_rnn).eval(eval_rnn)
    .precision(Precision::fp32_compute).kernel("rnn").family("rnn").flops(rnn_flops)
    .doc("long short-term memory over a sequence (opset 14: 'layout', batch-major X, Y and states): every "
         "direction, activation, clip, peepholes, input_forget, sequence_lens; the input projection as one product "
         "(split_recurrence), the steps in one kernel");
MODELC_REGISTER_OP(GRU)
    .since(7)
    .attrs(attrs_of(RnnCell::gru, 7, false))
    .inputs(3, 6).outputs(0, 2).validate(validate_rnn).infer(infer_rnn).eval(eval_rnn)
    .precision(Precision::fp32_compute).kernel("rnn").family("rnn").flops(rnn_flops)
    .doc("gated recurrent unit over a sequence: every direction, activation, clip, linear_before_reset, "
         "sequence_lens; the input projection as one product, the steps in one kernel");
MODELC_REGISTER_OP(GRU)
    .since(14)
    .attrs(attrs_of(RnnCell::gru, 14, false))
    .inputs(3, 6).outputs(0, 2).validate(validate_rnn).infer(infer_rnn).eval(eval_rnn)
    .precision(Precision::fp32_compute).kernel("rnn").family("rnn").flops(rnn_flops)
    .doc("gated recurrent unit over a sequence (opset 14: 'layout', batch-major X, Y and states): every "
         "direction, activation, clip, linear_before_reset, sequence_lens; the input projection as one product, the "
         "steps in one kernel");
MODELC_REGISTER_OP(RNN)
    .since(7)
    .attrs(attrs_of(RnnCell::rnn, 7, false))
    .inputs(3, 6).outputs(0, 2).validate(validate_rnn).infer(infer_rnn).eval(eval_rnn)
    .precision(Precision::fp32_compute).kernel("rnn").family("rnn").flops(rnn_flops)
    .doc("simple recurrent network over a sequence: every direction, activation, clip, sequence_lens; the "
         "input projection as one product, the steps in one kernel");
MODELC_REGISTER_OP(RNN)
    .since(14)
    .attrs(attrs_of(RnnCell::rnn, 14, false))
    .inputs(3, 6).outputs(0, 2).validate(validate_rnn).infer(infer_rnn).eval(eval_rnn)
    .precision(Precision::fp32_compute).kernel("rnn").family("rnn").flops(rnn_flops)
    .doc("simple recurrent network over a sequence (opset 14: 'layout', batch-major X, Y and states): every "
         "direction, activation, clip, sequence_lens; the input projection as one product, the steps in one kernel");

// The recurrence forms (passes/split_recurrence): input 0 is XW = X * W^T per direction, input 1 absent.
MODELC_REGISTER_OP(LSTMRecurrence)
    .domain(kModelcDomain).since(1)
    .attrs(attrs_of(RnnCell::lstm, 14, true))
    .inputs(1, 8).outputs(0, 3).validate(validate_rnn).infer(infer_rnn).eval(eval_rnn)
    .precision(Precision::fp32_compute).kernel("rnn").family("rnn").flops(rnn_flops)
    .doc("the steps of an LSTM on its input projection XW (made by split_recurrence)");
MODELC_REGISTER_OP(GRURecurrence)
    .domain(kModelcDomain).since(1)
    .attrs(attrs_of(RnnCell::gru, 14, true))
    .inputs(1, 6).outputs(0, 2).validate(validate_rnn).infer(infer_rnn).eval(eval_rnn)
    .precision(Precision::fp32_compute).kernel("rnn").family("rnn").flops(rnn_flops)
    .doc("the steps of a GRU on its input projection XW (made by split_recurrence)");
MODELC_REGISTER_OP(RNNRecurrence)
    .domain(kModelcDomain).since(1)
    .attrs(attrs_of(RnnCell::rnn, 14, true))
    .inputs(1, 6).outputs(0, 2).validate(validate_rnn).infer(infer_rnn).eval(eval_rnn)
    .precision(Precision::fp32_compute).kernel("rnn").family("rnn").flops(rnn_flops)
    .doc("the steps of an RNN on its input projection XW (made by split_recurrence)");

}  // namespace modelc::ops
