//! The stable text form of a program (`pimkit lower MODEL --dump`, snapshot tests).

use crate::ir::*;
use std::fmt::Write;

fn fmt_num(v: f64) -> String {
    if v.is_infinite() {
        if v > 0.0 { "inf".into() } else { "-inf".into() }
    } else if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:e}")
    }
}

pub fn fmt_index(ix: &Index) -> String {
    let mut s = String::new();
    for &(d, c) in &ix.terms {
        let term = match c {
            1 => format!("d{d}"),
            -1 => format!("-d{d}"),
            _ => format!("{c}*d{d}"),
        };
        if s.is_empty() {
            s = term;
        } else if let Some(t) = term.strip_prefix('-') {
            write!(s, " - {t}").unwrap();
        } else {
            write!(s, " + {term}").unwrap();
        }
    }
    if let Some(e) = &ix.dynamic {
        let t = format!("{{{}}}", fmt_expr(e));
        s = if s.is_empty() {
            t
        } else {
            format!("{s} + {t}")
        };
    }
    if ix.constant != 0 || s.is_empty() {
        if s.is_empty() {
            s = ix.constant.to_string();
        } else if ix.constant < 0 {
            write!(s, " - {}", -ix.constant).unwrap();
        } else {
            write!(s, " + {}", ix.constant).unwrap();
        }
    }
    s
}

fn fmt_access(operand: usize, index: &[Index]) -> String {
    let ix: Vec<String> = index.iter().map(fmt_index).collect();
    format!("%{operand}[{}]", ix.join(", "))
}

pub fn fmt_expr(e: &Expr) -> String {
    match e {
        Expr::Load { operand, index } => fmt_access(*operand, index),
        Expr::Const { v, dt } => format!("{}:{dt}", fmt_num(*v)),
        Expr::DimIndex(d) => format!("d{d}"),
        Expr::Unary(f, a) => format!("{}({})", format!("{f:?}").to_lowercase(), fmt_expr(a)),
        Expr::Binary(f, a, b) => format!(
            "{}({}, {})",
            format!("{f:?}").to_lowercase(),
            fmt_expr(a),
            fmt_expr(b)
        ),
        Expr::Select(c, a, b) => {
            format!("select({}, {}, {})", fmt_expr(c), fmt_expr(a), fmt_expr(b))
        }
        Expr::Cast(dt, a) => format!("cast<{dt}>({})", fmt_expr(a)),
        Expr::Fma(a, b, c) => format!("fma({}, {}, {})", fmt_expr(a), fmt_expr(b), fmt_expr(c)),
    }
}

fn fmt_tensor(p: &Program, t: TensorId) -> String {
    let ti = &p.tensors[t];
    let shape: Vec<String> = ti.shape.iter().map(|d| d.to_string()).collect();
    let mut s = format!("t{t} '{}' {}[{}]", ti.name, ti.dtype, shape.join(","));
    match &ti.def {
        TensorDef::Scalar(v) => write!(s, " = {} (scalar)", fmt_num(*v)).unwrap(),
        TensorDef::Fused { into } => write!(s, " fused into nest {into}").unwrap(),
        TensorDef::Dead => write!(s, " dead (removed)").unwrap(),
        TensorDef::View { root } => {
            let st: Vec<String> = ti.strides.iter().map(|x| x.to_string()).collect();
            write!(
                s,
                " view(t{root}, offset {}, strides [{}])",
                ti.offset,
                st.join(",")
            )
            .unwrap()
        }
        // only views print their strides
        _ => {}
    }
    if let Some(a) = ti.alloc {
        write!(s, " @a{a}").unwrap();
    }
    s
}

/// Render the whole program.
pub fn dump(p: &Program) -> String {
    let mut s = String::new();
    writeln!(
        s,
        "program '{}': {} nests, {} allocs",
        p.name,
        p.nests.len(),
        p.allocs.len()
    )
    .unwrap();
    for a in &p.allocs {
        let kind = format!("{:?}", a.kind).to_lowercase();
        let out = if a.holds_output { " output" } else { "" };
        let ts: Vec<String> = a.tensors.iter().map(|t| format!("t{t}")).collect();
        writeln!(
            s,
            "alloc a{} {kind}{out} '{}' {}x{} ({} B) holds {}",
            a.id,
            a.name,
            a.elems,
            a.dtype,
            a.bytes(),
            ts.join(",")
        )
        .unwrap();
    }
    for n in &p.nests {
        let dims: Vec<String> = n
            .dims
            .iter()
            .enumerate()
            .map(|(i, d)| {
                let k = if d.kind == DimKind::Parallel {
                    "par"
                } else {
                    "red"
                };
                format!("d{i}:{k}={}", d.extent)
            })
            .collect();
        writeln!(
            s,
            "nest {} {} '{}' {} {}",
            n.id,
            n.op,
            n.node,
            n.kind.name(),
            n.label
        )
        .unwrap();
        writeln!(s, "  dims [{}]", dims.join(" ")).unwrap();
        for (j, o) in n.operands.iter().enumerate() {
            let role = format!("{:?}", o.role).to_lowercase();
            writeln!(s, "  {role:<5} %{j} = {}", fmt_tensor(p, o.tensor)).unwrap();
        }
        for st in &n.stores {
            writeln!(
                s,
                "  {} = {}",
                fmt_access(st.operand, &st.index),
                fmt_expr(&st.value)
            )
            .unwrap();
        }
    }
    s
}
