//! Candidate → pimkit-ir graph. Blocks follow OFA's MBConv: 1x1 expand (absent when the
//! expand ratio is 1) + BN + act, depthwise k x k + BN + act, optional SE (GAP, 1x1 + ReLU,
//! 1x1 + HardSigmoid, Mul), 1x1 project + BN, identity shortcut when stride 1 and in == out.
//! BatchNorm is folded away (inference export), so a conv carries its BN.
//!
//! Weights are either shape-only (for the crossbar mapper) or sliced from one shared random
//! supernet ([`SuperNet`]), as OFA slices a sub-net's weights from the trained supernet:
//! the first channels and the centred k x k of the largest kernel.

use crate::error::Result;
use crate::space::{Act, Config, Space, make_divisible};
use pimkit_ir::{
    BinaryOp, ConvAttrs, DType, Graph, Op, PoolKind, Tensor, TensorType, UnaryOp, ValueId,
};
use rand::{RngExt, SeedableRng};
use rand_pcg::Pcg64Mcg;
use std::collections::HashMap;
use std::sync::Mutex;

/// Shared random supernet weights: every parameter at its largest shape, generated once
/// and deterministically from a seed. Scales are Kaiming-uniform for the largest fan-in;
/// slices are rescaled to their own fan-in (no BatchNorm renormalises them at init).
#[derive(Debug)]
pub struct SuperNet {
    params: HashMap<String, (Vec<usize>, Vec<f32>)>,
    /// Slices already cut, by (name, shape): a search revisits the same few per slot.
    slices: Mutex<HashMap<(String, Vec<usize>), Tensor>>,
}

impl SuperNet {
    /// Weights of the largest network of `space`, seeded by `seed`.
    pub fn new(space: &Space, seed: u64) -> Result<SuperNet> {
        let mut g = Graph::new("supernet");
        let mut shapes = Vec::new();
        build_into(
            space,
            &space.largest(),
            &mut Src::Record(&mut shapes),
            8,
            1,
            true,
            &mut g,
        )?;
        let mut params = HashMap::new();
        for (i, (name, shape, fan_in, gain)) in shapes.into_iter().enumerate() {
            // One stream per parameter (in build order) so the tensors do not depend on
            // each other's sizes.
            let mut rng =
                Pcg64Mcg::seed_from_u64(seed ^ (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
            let n: usize = shape.iter().product();
            let b = if name.ends_with(".bias") {
                0.05
            } else {
                gain * (3.0 / fan_in.max(1) as f32).sqrt()
            };
            let data = (0..n).map(|_| rng.random_range(-b..b)).collect();
            params.insert(name, (shape, data));
        }
        Ok(SuperNet {
            params,
            slices: Mutex::new(HashMap::new()),
        })
    }

    /// [`SuperNet::slice`] through the cache.
    fn slice_cached(&self, name: &str, shape: &[usize]) -> Option<Tensor> {
        let key = (name.to_string(), shape.to_vec());
        if let Some(t) = self.slices.lock().ok()?.get(&key) {
            return Some(t.clone());
        }
        let t = self.slice(name, shape)?;
        if let Ok(mut m) = self.slices.lock() {
            m.insert(key, t.clone());
        }
        Some(t)
    }

    /// The parameter `name` cut to `shape`: leading rows/channels, centred kernel window,
    /// rescaled by sqrt(full fan-in / active fan-in).
    fn slice(&self, name: &str, shape: &[usize]) -> Option<Tensor> {
        let (full, data) = self.params.get(name)?;
        if full.len() != shape.len() || full.iter().zip(shape).any(|(f, s)| s > f) {
            return None;
        }
        let scale = if shape.len() == 4 {
            let ff = (full[1] * full[2] * full[3]) as f32;
            let fa = (shape[1] * shape[2] * shape[3]) as f32;
            (ff / fa).sqrt()
        } else if shape.len() == 2 {
            (full[1] as f32 / shape[1] as f32).sqrt()
        } else {
            1.0
        };
        let mut out = Vec::with_capacity(shape.iter().product());
        match shape.len() {
            1 => out.extend_from_slice(&data[..shape[0]]),
            2 => {
                for o in 0..shape[0] {
                    out.extend(
                        data[o * full[1]..o * full[1] + shape[1]]
                            .iter()
                            .map(|v| v * scale),
                    );
                }
            }
            4 => {
                let (oh, ow) = ((full[2] - shape[2]) / 2, (full[3] - shape[3]) / 2);
                for o in 0..shape[0] {
                    for i in 0..shape[1] {
                        for y in 0..shape[2] {
                            let base = ((o * full[1] + i) * full[2] + y + oh) * full[3] + ow;
                            out.extend(data[base..base + shape[3]].iter().map(|v| v * scale));
                        }
                    }
                }
            }
            _ => return None,
        }
        Some(Tensor::from_f32(shape.to_vec(), out))
    }
}

/// Where parameters come from.
enum Src<'a> {
    ShapeOnly,
    Shared(&'a SuperNet),
    /// Record (name, shape, fan_in, gain) instead of adding data (used by SuperNet::new).
    Record(&'a mut Vec<(String, Vec<usize>, usize, f32)>),
}

const GAIN_RELU: f32 = std::f32::consts::SQRT_2;

struct B<'a, 'b> {
    g: &'b mut Graph,
    src: &'b mut Src<'a>,
}

impl B<'_, '_> {
    fn param(&mut self, name: &str, shape: Vec<usize>, fan_in: usize, gain: f32) -> ValueId {
        match self.src {
            Src::ShapeOnly => self
                .g
                .add_const_shape(name, TensorType::new(DType::F32, shape)),
            Src::Record(v) => {
                v.push((name.to_string(), shape.clone(), fan_in, gain));
                self.g
                    .add_const_shape(name, TensorType::new(DType::F32, shape))
            }
            Src::Shared(s) => match s.slice_cached(name, &shape) {
                Some(t) => self.g.add_const(name, t),
                None => self.g.add_const(name, Tensor::zeros(DType::F32, shape)),
            },
        }
    }

    fn conv(
        &mut self,
        name: &str,
        x: ValueId,
        cout: usize,
        k: usize,
        stride: usize,
        group: usize,
        bias: bool,
        gain: f32,
    ) -> Result<ValueId> {
        let cin = self.g.ty(x).shape[1];
        let w = self.param(
            &format!("{name}.weight"),
            vec![cout, cin / group, k, k],
            k * k * cin / group,
            gain,
        );
        let mut ins = vec![Some(x), Some(w)];
        if bias {
            ins.push(Some(self.param(
                &format!("{name}.bias"),
                vec![cout],
                1,
                1.0,
            )));
        }
        let attrs = ConvAttrs::simple(vec![k, k], stride, k / 2, group);
        Ok(self.g.add_node(name, Op::Conv(attrs), ins)?[0])
    }

    fn act(&mut self, name: &str, x: ValueId, a: Option<Act>) -> Result<ValueId> {
        let op = match a {
            None => return Ok(x),
            Some(Act::Relu) => UnaryOp::Relu,
            Some(Act::Hswish) => UnaryOp::HardSwish,
        };
        Ok(self.g.op(name, Op::Unary(op), &[x])?)
    }

    /// MBConv block.
    #[allow(clippy::too_many_arguments)]
    fn block(
        &mut self,
        m: &str,
        x: ValueId,
        sp: &Space,
        out: usize,
        k: usize,
        e: usize,
        stride: usize,
        act: Act,
        se: bool,
    ) -> Result<ValueId> {
        let cin = self.g.ty(x).shape[1];
        let mut h = x;
        let mid = if e == 1 {
            cin
        } else {
            let mid = make_divisible((cin * e) as f64, sp.divisor);
            h = self.conv(&format!("{m}.expand"), h, mid, 1, 1, 1, false, GAIN_RELU)?;
            h = self.act(&format!("{m}.expand_act"), h, Some(act))?;
            mid
        };
        h = self.conv(&format!("{m}.dw"), h, mid, k, stride, mid, false, GAIN_RELU)?;
        h = self.act(&format!("{m}.dw_act"), h, Some(act))?;
        if se {
            let r = make_divisible(mid as f64 / sp.se_reduction as f64, sp.divisor);
            let s = self
                .g
                .op(format!("{m}.se.pool"), Op::GlobalPool(PoolKind::Avg), &[h])?;
            let s = self.conv(&format!("{m}.se.reduce"), s, r, 1, 1, 1, true, GAIN_RELU)?;
            let s = self.act(&format!("{m}.se.act"), s, Some(Act::Relu))?;
            let s = self.conv(&format!("{m}.se.expand"), s, mid, 1, 1, 1, true, 1.0)?;
            let s = self.g.op(
                format!("{m}.se.gate"),
                Op::Unary(UnaryOp::HardSigmoid {
                    alpha: 1.0 / 6.0,
                    beta: 0.5,
                }),
                &[s],
            )?;
            h = self
                .g
                .op(format!("{m}.se.mul"), Op::Binary(BinaryOp::Mul), &[h, s])?;
        }
        h = self.conv(&format!("{m}.project"), h, out, 1, 1, 1, false, 1.0)?;
        if stride == 1 && cin == out {
            h = self
                .g
                .op(format!("{m}.add"), Op::Binary(BinaryOp::Add), &[h, x])?;
        }
        Ok(h)
    }
}

impl B<'_, '_> {
    /// The part every candidate shares: input, stem and the fixed blocks.
    fn front(&mut self, space: &Space, res: usize, batch: usize) -> Result<ValueId> {
        let x = self.g.add_input(
            "input",
            TensorType::new(DType::F32, vec![batch, space.in_channels, res, res]),
        );
        let st = &space.stem;
        let mut h = self.conv("stem", x, st.out, st.kernel, st.stride, 1, false, GAIN_RELU)?;
        h = self.act("stem_act", h, Some(st.act))?;
        for (idx, f) in space.fixed.iter().enumerate() {
            h = self.block(
                &format!("blocks.{idx}"),
                h,
                space,
                f.out,
                f.kernel,
                f.expand,
                f.stride,
                f.act,
                f.se,
            )?;
        }
        Ok(h)
    }

    /// Elastic block `j` of stage `s` with kernel `k` and expand ratio `e`.
    fn stage_block(
        &mut self,
        space: &Space,
        x: ValueId,
        s: usize,
        j: usize,
        (k, e): (usize, usize),
    ) -> Result<ValueId> {
        let stage = &space.stages[s];
        // Block slots are named by stage and position so a slot keeps its weights
        // whatever the depth of other stages (weight sharing).
        let stride = if j == 0 { stage.stride } else { 1 };
        self.block(
            &format!("stages.{s}.{j}"),
            x,
            space,
            stage.out,
            k,
            e,
            stride,
            stage.act,
            stage.se,
        )
    }

    /// The final 1x1 expand and its activation (the last part the proxy runs).
    fn final_expand(&mut self, space: &Space, x: ValueId) -> Result<ValueId> {
        let hd = &space.head;
        let h = self.conv(
            "final_expand",
            x,
            hd.final_expand,
            1,
            1,
            1,
            false,
            GAIN_RELU,
        )?;
        self.act("final_expand_act", h, Some(hd.act))
    }
}

/// Build the network into `g`; `head = false` stops after the final expand activation
/// (the proxy does not need the pooled feature-mix and classifier).
fn build_into(
    space: &Space,
    c: &Config,
    src: &mut Src<'_>,
    res: usize,
    batch: usize,
    head: bool,
    g: &mut Graph,
) -> Result<()> {
    let mut b = B { g, src };
    let mut h = b.front(space, res, batch)?;
    for (s, blocks) in c.stages.iter().enumerate() {
        for (j, &ke) in blocks.iter().enumerate() {
            h = b.stage_block(space, h, s, j, ke)?;
        }
    }
    h = b.final_expand(space, h)?;
    let hd = &space.head;
    if !head {
        b.g.outputs = vec![h];
        return Ok(());
    }
    h = b.g.op("pool", Op::GlobalPool(PoolKind::Avg), &[h])?;
    h = b.conv("feature_mix", h, hd.feature_mix, 1, 1, 1, false, GAIN_RELU)?;
    h = b.act("feature_mix_act", h, Some(hd.act))?;
    h = b.g.op(
        "flatten",
        Op::Reshape {
            shape: vec![batch, hd.feature_mix],
        },
        &[h],
    )?;
    let w = b.param(
        "classifier.weight",
        vec![space.classes, hd.feature_mix],
        hd.feature_mix,
        1.0,
    );
    let bias = b.param("classifier.bias", vec![space.classes], 1, 1.0);
    let y = b.g.op(
        "classifier",
        Op::Gemm {
            alpha: 1.0,
            beta: 1.0,
            trans_a: false,
            trans_b: true,
        },
        &[h, w, bias],
    )?;
    b.g.outputs = vec![y];
    Ok(())
}

fn check_config(space: &Space, c: &Config) -> Result<()> {
    space.encode(c).map(|_| ())
}

/// Shape-only graph of `c` at the space's resolution, batch 1 (what the mapper needs).
pub fn build_shape_only(space: &Space, c: &Config) -> Result<Graph> {
    check_config(space, c)?;
    let mut g = Graph::new(format!("{}:{c}", space.name));
    build_into(
        space,
        c,
        &mut Src::ShapeOnly,
        space.resolution,
        1,
        true,
        &mut g,
    )?;
    pimkit_ir::verify(&g)?;
    Ok(g)
}

/// Graph of `c` with weights sliced from `net`, at `res` x `res` and batch `batch`.
pub fn build_with_weights(
    space: &Space,
    c: &Config,
    net: &SuperNet,
    res: usize,
    batch: usize,
) -> Result<Graph> {
    build_weighted(space, c, net, res, batch, true)
}

/// Like [`build_with_weights`]; `head = false` ends the graph at the final expand
/// activation (what the proxy uses).
pub fn build_weighted(
    space: &Space,
    c: &Config,
    net: &SuperNet,
    res: usize,
    batch: usize,
    head: bool,
) -> Result<Graph> {
    check_config(space, c)?;
    let mut g = Graph::new(format!("{}:{c}", space.name));
    build_into(space, c, &mut Src::Shared(net), res, batch, head, &mut g)?;
    pimkit_ir::verify(&g)?;
    Ok(g)
}

/// One piece of the proxy's network, built and run on its own so that the proxy can keep
/// each piece's output by the configuration prefix that produced it (candidates share
/// most of their prefixes). The pieces chained give exactly the nodes, names and weights
/// of [`build_weighted`] with `head = false`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Part {
    /// Input, stem and fixed blocks (the same for every candidate).
    Front,
    /// Elastic block `pos` of stage `stage` with kernel `k` and expand ratio `e`.
    Block {
        stage: usize,
        pos: usize,
        k: usize,
        e: usize,
    },
    /// Final 1x1 expand and its activation.
    FinalExpand,
}

impl Part {
    /// The pieces of `c` in execution order.
    pub fn of(c: &Config) -> Vec<Part> {
        let mut v = vec![Part::Front];
        for (stage, blocks) in c.stages.iter().enumerate() {
            for (pos, &(k, e)) in blocks.iter().enumerate() {
                v.push(Part::Block { stage, pos, k, e });
            }
        }
        v.push(Part::FinalExpand);
        v
    }
}

/// The graph of one [`Part`] with weights sliced from `net`. `Front` takes the image
/// batch (`batch` x channels x `res` x `res`, input `input` as in the full graph); the
/// others take the previous part's output as input `x` of type `x_ty`.
pub fn build_part(
    space: &Space,
    part: Part,
    net: &SuperNet,
    res: usize,
    batch: usize,
    x_ty: &TensorType,
) -> Result<Graph> {
    let mut g = Graph::new(format!("{}:{part:?}", space.name));
    let mut src = Src::Shared(net);
    let mut b = B {
        g: &mut g,
        src: &mut src,
    };
    let y = match part {
        Part::Front => b.front(space, res, batch)?,
        Part::Block { stage, pos, k, e } => {
            if stage >= space.stages.len() {
                return Err(crate::error::NasError::Config {
                    config: format!("{part:?}"),
                    msg: format!("the space has {} stages", space.stages.len()),
                });
            }
            let x = b.g.add_input("x", x_ty.clone());
            b.stage_block(space, x, stage, pos, (k, e))?
        }
        Part::FinalExpand => {
            let x = b.g.add_input("x", x_ty.clone());
            b.final_expand(space, x)?
        }
    };
    g.outputs = vec![y];
    pimkit_ir::verify(&g)?;
    Ok(g)
}
