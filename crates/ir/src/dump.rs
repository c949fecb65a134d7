use crate::{Graph, Op, ValueDef};
use std::fmt::Write;

/// Attributes of an op in a compact, stable text form.
fn attrs(op: &Op) -> String {
    let conv = |a: &crate::ConvAttrs| {
        format!(
            "k={:?} s={:?} p={:?} d={:?} g={}",
            a.kernel, a.strides, a.pads, a.dilations, a.group
        )
    };
    match op {
        Op::Unary(u) => match u {
            crate::UnaryOp::HardSigmoid { alpha, beta } => format!("alpha={alpha} beta={beta}"),
            crate::UnaryOp::LeakyRelu { alpha } | crate::UnaryOp::Elu { alpha } => {
                format!("alpha={alpha}")
            }
            crate::UnaryOp::Gelu { tanh } => format!("tanh={tanh}"),
            _ => String::new(),
        },
        Op::Binary(crate::BinaryOp::Mod { fmod }) => format!("fmod={fmod}"),
        Op::Binary(_)
        | Op::Where
        | Op::Identity
        | Op::MatMul
        | Op::QLinearMatMul
        | Op::MatMulInteger => String::new(),
        Op::QLinearAdd | Op::QLinearMul | Op::QLinearSigmoid => String::new(),
        Op::Clip { min, max } => format!("min={min:?} max={max:?}"),
        Op::Cast {
            to,
            saturate,
            e8m0_round,
        } => {
            let sat = if *saturate { "" } else { " saturate=false" };
            let round = match e8m0_round {
                crate::E8M0Round::Up => String::new(),
                r => format!(" round={}", r.name()),
            };
            format!("to={to}{sat}{round}")
        }
        Op::Conv(a) | Op::QLinearConv(a) | Op::ConvInteger(a) => conv(a),
        Op::ConvTranspose(a) => format!(
            "k={:?} s={:?} p={:?} d={:?} op={:?} g={}",
            a.kernel, a.strides, a.pads, a.dilations, a.output_padding, a.group
        ),
        Op::PRelu => String::new(),
        Op::Resize(a) => {
            let mut s = format!(
                "mode={:?} coord={:?} scales={:?} sizes={:?}",
                a.mode, a.coord, a.scales, a.sizes
            );
            if a.mode == crate::ResizeMode::Cubic {
                let _ = write!(
                    s,
                    " a={} exclude_outside={}",
                    a.cubic_coeff_a, a.exclude_outside
                );
            }
            if a.antialias {
                s.push_str(" antialias");
            }
            if a.coord == crate::CoordMode::TfCropAndResize {
                let _ = write!(
                    s,
                    " roi={:?} extrapolation={}",
                    a.roi, a.extrapolation_value
                );
            }
            s
        }
        Op::Pool(p) => format!(
            "k={:?} s={:?} p={:?} d={:?} ceil={} include_pad={}",
            p.kernel, p.strides, p.pads, p.dilations, p.ceil_mode, p.count_include_pad
        ),
        Op::GlobalPool(_) => String::new(),
        Op::Gemm {
            alpha,
            beta,
            trans_a,
            trans_b,
        } => format!("alpha={alpha} beta={beta} ta={trans_a} tb={trans_b}"),
        Op::BatchNorm { epsilon } => format!("eps={epsilon}"),
        Op::LayerNorm { axis, epsilon } => format!("axis={axis} eps={epsilon}"),
        Op::Softmax { axis } | Op::LogSoftmax { axis } => format!("axis={axis}"),
        Op::Reduce { axes, keepdims, .. } => format!("axes={axes:?} keepdims={keepdims}"),
        Op::ArgMax {
            axis,
            keepdims,
            select_last,
        } => {
            let last = if *select_last { " select_last" } else { "" };
            format!("axis={axis} keepdims={keepdims}{last}")
        }
        Op::Reshape { shape } | Op::Expand { shape } => format!("shape={shape:?}"),
        Op::Transpose { perm } => format!("perm={perm:?}"),
        Op::Concat { axis } | Op::Gather { axis } | Op::QLinearConcat { axis } => {
            format!("axis={axis}")
        }
        Op::Split { axis, sizes } => format!("axis={axis} sizes={sizes:?}"),
        Op::Slice { axes } => axes
            .iter()
            .map(|a| format!("{}:{}:{}:{}", a.axis, a.start, a.end, a.step))
            .collect::<Vec<_>>()
            .join(" "),
        Op::Pad { pads, mode, value } => format!("pads={pads:?} mode={mode:?} value={value}"),
        Op::Tile { repeats } => format!("repeats={repeats:?}"),
        Op::Range { count } => format!("count={count}"),
        Op::If { .. } => String::new(),
        Op::Loop {
            n_carried,
            scan_len,
            ..
        } => match scan_len {
            Some(n) => format!("carried={n_carried} scan_len={n}"),
            None => format!("carried={n_carried}"),
        },
        Op::Scan { attrs: a, .. } => format!(
            "states={} in_axes={:?} in_rev={:?} out_axes={:?} out_rev={:?}",
            a.n_state, a.in_axes, a.in_reverse, a.out_axes, a.out_reverse
        ),
        Op::Lstm(a) | Op::Gru(a) => format!(
            "hidden={} dir={:?} lbr={} batch_first={}",
            a.hidden_size, a.direction, a.linear_before_reset, a.batch_first
        ),
        Op::QuantizeLinear { axis, to } => format!("axis={axis} to={to}"),
        Op::DequantizeLinear { axis } => format!("axis={axis}"),
        Op::QLinearGlobalAveragePool { channels_last } => format!("channels_last={channels_last}"),
        Op::QGemm {
            alpha,
            trans_a,
            trans_b,
        } => format!("alpha={alpha} ta={trans_a} tb={trans_b}"),
        Op::QLinearLeakyRelu { alpha } => format!("alpha={alpha}"),
        Op::QLinearAveragePool(p) => format!(
            "k={:?} s={:?} p={:?} d={:?} ceil={} include_pad={}",
            p.kernel, p.strides, p.pads, p.dilations, p.ceil_mode, p.count_include_pad
        ),
        Op::QLinearSoftmax { axis, flatten } => {
            format!("axis={axis}{}", if *flatten { " flatten" } else { "" })
        }
        Op::QLinearWhere => String::new(),
        // ---- ONNX node-suite coverage (issue #16 item 4): the attributes as Rust writes
        // them (`axis: 1, reduction: Add`), which is stable for a given op definition.
        Op::GatherElements { .. }
        | Op::GatherNd { .. }
        | Op::ScatterElements { .. }
        | Op::ScatterNd { .. }
        | Op::TensorScatter { .. }
        | Op::Cumulative { .. }
        | Op::TopK { .. }
        | Op::ArgMin { .. }
        | Op::BitCast { .. }
        | Op::Einsum { .. }
        | Op::MaxUnpool { .. }
        | Op::ReverseSequence { .. }
        | Op::Det
        | Op::Dft { .. }
        | Op::Stft { .. }
        | Op::Col2Im(_)
        | Op::GridSample { .. }
        | Op::RoiAlign(_)
        | Op::DeformConv { .. }
        | Op::Rnn(_)
        | Op::DynamicQuantizeLinear
        | Op::NonZero { .. }
        | Op::Unique { .. }
        | Op::Compress { .. }
        | Op::NonMaxSuppression { .. }
        | Op::TfIdfVectorizer(_)
        | Op::MaxPoolIndices { .. } => debug_attrs(op),
    }
}

/// `Op::X { a: 1 }` / `Op::X(Attrs { a: 1 })` -> `a: 1`; unit variants -> "".
fn debug_attrs(op: &Op) -> String {
    let d = format!("{op:?}");
    let inner = match d.find(['{', '(']) {
        Some(i) => &d[i..],
        None => return String::new(),
    };
    let inner = inner.trim_start_matches('(').trim_end_matches(')');
    let inner = match inner.find('{') {
        Some(i) => &inner[i..],
        None => inner,
    };
    inner
        .trim_start_matches('{')
        .trim_end_matches('}')
        .trim()
        .to_string()
}

/// The subgraphs of a control-flow op, labelled.
pub fn subgraphs(op: &Op) -> Vec<(&'static str, &Graph)> {
    match op {
        Op::If {
            then_branch,
            else_branch,
        } => vec![("then", then_branch.graph()), ("else", else_branch.graph())],
        Op::Loop { body, .. } | Op::Scan { body, .. } => vec![("body", body.graph())],
        _ => vec![],
    }
}

/// Stable text form of a graph: inputs, constants (type only), then one line per node;
/// a control-flow node's subgraphs follow it, indented.
/// Used by `pimkit dump` and by snapshot tests, so its format changes only on purpose.
pub fn dump(g: &Graph) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "graph {} {{", g.name);
    for &i in &g.inputs {
        let v = g.value(i);
        let _ = writeln!(s, "  input %{}: {}", v.name, v.ty);
    }
    for v in &g.values {
        if let ValueDef::Const(d) = &v.def {
            let _ = writeln!(
                s,
                "  const %{}: {}{}",
                v.name,
                v.ty,
                if d.is_none() { " (shape only)" } else { "" }
            );
        }
    }
    for n in &g.nodes {
        let outs: Vec<String> = n
            .outputs
            .iter()
            .map(|&o| format!("%{}: {}", g.value(o).name, g.value(o).ty))
            .collect();
        let ins: Vec<String> = n
            .inputs
            .iter()
            .map(|i| {
                i.map(|v| format!("%{}", g.value(v).name))
                    .unwrap_or_else(|| "_".into())
            })
            .collect();
        let a = attrs(&n.op);
        let _ = writeln!(
            s,
            "  {} = {}[{}]({}){}{}",
            outs.join(", "),
            n.op.name(),
            n.name,
            ins.join(", "),
            if a.is_empty() {
                String::new()
            } else {
                format!(" {{{a}}}")
            },
            n.source
                .as_ref()
                .map(|src| format!("  # from {src}"))
                .unwrap_or_default()
        );
        for (label, sub) in subgraphs(&n.op) {
            let _ = writeln!(s, "    {label}:");
            for line in dump(sub).lines() {
                let _ = writeln!(s, "      {line}");
            }
        }
    }
    let outs: Vec<String> = g
        .outputs
        .iter()
        .map(|&o| format!("%{}", g.value(o).name))
        .collect();
    let _ = writeln!(s, "  return {}", outs.join(", "));
    s.push_str("}\n");
    s
}
