//! LSTM, GRU and plain RNN with the default activations (what PyTorch exports).

use super::{Converter, Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{Op, RnnAttrs, RnnDirection};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "LSTM"), rnn);
    r.insert(("", "GRU"), rnn);
    r.insert(("", "RNN"), rnn);
}

fn rnn(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let lstm = n.op_type == "LSTM";
    let direction = match a.string("direction")?.as_deref().unwrap_or("forward") {
        "forward" => RnnDirection::Forward,
        "reverse" => RnnDirection::Reverse,
        "bidirectional" => RnnDirection::Bidirectional,
        d => return Err(a.err("direction", format!("unknown direction '{d}'"))),
    };
    let defaults: &[&str] = match n.op_type {
        "LSTM" => &["Sigmoid", "Tanh", "Tanh"],
        "GRU" => &["Sigmoid", "Tanh"],
        _ => &["Tanh"],
    };
    if let Some(acts) = a.strings("activations")? {
        let want: Vec<&str> = (0..direction.num_directions())
            .flat_map(|_| defaults.iter().copied())
            .collect();
        if acts.iter().map(|s| s.as_str()).ne(want.iter().copied()) {
            return Err(a.err(
                "activations",
                format!("{acts:?}: only the default activations {defaults:?} are supported"),
            ));
        }
    }
    for attr in ["activation_alpha", "activation_beta", "clip"] {
        if a.has(attr) {
            return Err(a.err(
                attr,
                "is not supported (default activations without clipping only)",
            ));
        }
    }
    if lstm && a.int("input_forget", 0)? != 0 {
        return Err(a.err(
            "input_forget",
            "coupled input/forget gates are not supported",
        ));
    }
    if lstm && n.input(7).is_some() {
        return Err(ctx.err(n, "peephole weights (input 7, P) are not supported"));
    }
    let hidden = a
        .opt_int("hidden_size")?
        .and_then(crate::attr::to_dim)
        .filter(|&h| h > 0)
        .ok_or_else(|| a.err("hidden_size", "is required and must be positive"))?;
    let attrs = RnnAttrs {
        hidden_size: hidden,
        direction,
        linear_before_reset: n.op_type == "GRU" && a.bool("linear_before_reset", false)?,
        batch_first: a.bool("layout", false)?,
    };
    let count = if lstm { 7 } else { 6 };
    let ins = (0..count)
        .map(|i| ctx.opt_value(n, i))
        .collect::<Result<_>>()?;
    let op = match n.op_type {
        "LSTM" => Op::Lstm(attrs),
        "GRU" => Op::Gru(attrs),
        _ => Op::Rnn(attrs),
    };
    ctx.emit(n, op, ins)?;
    Ok(())
}
