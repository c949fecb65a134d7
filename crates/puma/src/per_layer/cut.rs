//! A weighted node (Conv, Gemm, MatMul with constant weights) in a form that can be
//! cut by channels, and its parts as graphs of their own (`split.rs` runs them).

use pimkit_ir::{BinaryOp, ConvAttrs, DType, Graph, Op, Tensor, TensorType};

/// Elements of `data` (shape `shape`) with index `lo..hi` on `axis`.
pub(super) fn slice(data: &[f32], shape: &[usize], axis: usize, lo: usize, hi: usize) -> Tensor {
    let inner: usize = shape[axis + 1..].iter().product();
    let outer: usize = shape[..axis].iter().product();
    let n = shape[axis];
    let mut out = Vec::with_capacity(outer * (hi - lo) * inner);
    for o in 0..outer {
        out.extend_from_slice(&data[(o * n + lo) * inner..(o * n + hi) * inner]);
    }
    let mut sh = shape.to_vec();
    sh[axis] = hi - lo;
    Tensor::from_f32(sh, out)
}

/// A weighted node in a form that can be cut: y = x ⊛ w (+ b).
pub(super) struct Weighted {
    x: Tensor,
    /// Conv: [Cout, Cin/g, kh, kw]; dense: [K, N] (transposes and α applied).
    w: Tensor,
    /// [Cout] or [N] (β applied).
    b: Option<Vec<f32>>,
    conv: Option<ConvAttrs>,
}

impl Weighted {
    pub(super) fn of(g: &Graph, ni: usize, x: Tensor) -> Option<Weighted> {
        let n = &g.nodes[ni];
        let data = |k: usize| -> Option<&Tensor> { g.const_data((*n.inputs.get(k)?)?) };
        if !x.dtype().is_float() || x.shape.is_empty() {
            return None;
        }
        match &n.op {
            Op::Conv(c) if x.shape.len() == 4 && c.kernel.len() == 2 => {
                let w = data(1)?.clone();
                if w.shape.len() != 4 || c.group == 0 || w.shape[0] % c.group != 0 {
                    return None;
                }
                let b = match n.inputs.get(2).copied().flatten() {
                    None => None,
                    Some(_) => Some(data(2)?.to_f32_vec()),
                };
                Some(Weighted {
                    x,
                    w: Tensor::from_f32(w.shape.clone(), w.to_f32_vec()),
                    b,
                    conv: Some(c.clone()),
                })
            }
            Op::Gemm {
                alpha,
                beta,
                trans_a: false,
                trans_b,
            } => {
                let w = data(1)?;
                if w.shape.len() != 2 || x.shape.len() != 2 {
                    return None;
                }
                let (r, c) = (w.shape[0], w.shape[1]);
                let v = w.to_f32_vec();
                let (k, nn) = if *trans_b { (c, r) } else { (r, c) };
                let mut kn = vec![0f32; k * nn];
                for i in 0..k {
                    for j in 0..nn {
                        kn[i * nn + j] = alpha * if *trans_b { v[j * c + i] } else { v[i * c + j] };
                    }
                }
                let b = match n.inputs.get(2).copied().flatten() {
                    None => None,
                    Some(_) => {
                        let t = data(2)?;
                        let v = t.to_f32_vec();
                        // Only a bias shared by every row ([N], [1, N] or a scalar).
                        match v.len() {
                            1 => Some(vec![beta * v[0]; nn]),
                            l if l == nn => Some(v.iter().map(|x| beta * x).collect()),
                            _ => return None,
                        }
                    }
                };
                Some(Weighted {
                    x,
                    w: Tensor::from_f32(vec![k, nn], kn),
                    b,
                    conv: None,
                })
            }
            Op::MatMul => {
                let w = data(1)?;
                (w.shape.len() == 2 && n.inputs[0].is_some_and(|a| !g.is_const(a))).then(|| {
                    Weighted {
                        x,
                        w: Tensor::from_f32(w.shape.clone(), w.to_f32_vec()),
                        b: None,
                        conv: None,
                    }
                })
            }
            _ => None,
        }
    }

    /// Input and output channels (per the whole node), and groups.
    pub(super) fn channels(&self) -> (usize, usize, usize) {
        match &self.conv {
            Some(c) => (self.x.shape[1], self.w.shape[0], c.group),
            None => (self.w.shape[0], self.w.shape[1], 1),
        }
    }

    /// One part as a graph: input channels `ci`, output channels `co`, `groups` groups;
    /// with the bias (of channels `co`) when `bias` (a partial sum over input channels
    /// other than the first part's has none: the bias is added once).
    pub(super) fn part(
        &self,
        name: &str,
        ci: (usize, usize),
        co: (usize, usize),
        groups: usize,
        bias: bool,
    ) -> Result<(Graph, Tensor), String> {
        let xs = &self.x.shape;
        let cax = if self.conv.is_some() { 1 } else { xs.len() - 1 };
        let x = slice(&self.x.to_f32_vec(), xs, cax, ci.0, ci.1);
        let wv = self.w.to_f32_vec();
        let ws = &self.w.shape;
        let mut g = Graph::new(name.to_string());
        let xi = g.add_input("x", TensorType::new(DType::F32, x.shape.clone()));
        let b = self
            .b
            .as_ref()
            .filter(|_| bias)
            .map(|b| Tensor::from_f32(vec![co.1 - co.0], b[co.0..co.1].to_vec()));
        let y = match &self.conv {
            Some(c) => {
                // Rows co of w; with one group, columns ci of each row (a grouped
                // part's rows already hold only its groups' input channels).
                let rows = slice(&wv, ws, 0, co.0, co.1);
                let w = if c.group == 1 {
                    slice(&rows.to_f32_vec(), &rows.shape, 1, ci.0, ci.1)
                } else {
                    rows
                };
                let wi = g.add_const(format!("{name}/w"), w);
                let mut ins = vec![wi];
                if let Some(b) = b {
                    ins.push(g.add_const(format!("{name}/b"), b));
                }
                ins.insert(0, xi);
                let attrs = ConvAttrs {
                    group: groups,
                    ..c.clone()
                };
                g.op(name, Op::Conv(attrs), &ins)
            }
            None => {
                let rows = slice(&wv, ws, 0, ci.0, ci.1);
                let w = slice(&rows.to_f32_vec(), &rows.shape, 1, co.0, co.1);
                let wi = g.add_const(format!("{name}/w"), w);
                if x.shape.len() == 2 {
                    let mut ins = vec![xi, wi];
                    if let Some(b) = b {
                        ins.push(g.add_const(format!("{name}/b"), b));
                    }
                    let gemm = Op::Gemm {
                        alpha: 1.0,
                        beta: 1.0,
                        trans_a: false,
                        trans_b: false,
                    };
                    let y = g.op(name, gemm, &ins).map_err(|e| e.to_string())?;
                    g.outputs.push(y);
                    return Ok((g, x));
                }
                let y = g.op(name, Op::MatMul, &[xi, wi]);
                match (y, b) {
                    (Ok(y), Some(b)) => {
                        let bi = g.add_const(format!("{name}/b"), b);
                        g.op(format!("{name}/bias"), Op::Binary(BinaryOp::Add), &[y, bi])
                    }
                    (y, _) => y,
                }
            }
        }
        .map_err(|e| e.to_string())?;
        g.outputs.push(y);
        Ok((g, x))
    }
}
