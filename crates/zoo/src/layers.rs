//! Graph builder shared by every entry: unique meaningful names, seeded weights (or
//! shape-only constants), and the layer helpers PyTorch modules export to (Conv with
//! folded or explicit BatchNormalization, activations, Linear as Gemm/MatMul, pooling).

use crate::init::{self, WeightRng};
use crate::{Params, Result, ZooError};
use pimkit_ir::{
    BinaryOp, ConvAttrs, DType, Graph, Op, PoolAttrs, PoolKind, Tensor, TensorType, UnaryOp,
    ValueId,
};
use std::collections::HashSet;

/// Activation functions as PyTorch exports them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Act {
    None,
    Relu,
    /// nn.ReLU6 -> Clip(0, 6)
    Relu6,
    /// nn.Hardswish -> HardSwish (opset 14)
    HardSwish,
    /// nn.Hardsigmoid -> HardSigmoid(alpha = 1/6, beta = 0.5)
    HardSigmoid,
    Sigmoid,
}

impl Act {
    /// Kaiming gain of the layer feeding this activation.
    pub fn gain(self) -> f32 {
        match self {
            Act::Relu | Act::Relu6 | Act::HardSwish => init::GAIN_RELU,
            _ => init::GAIN_LINEAR,
        }
    }
}

/// Convolution hyper-parameters (square kernels; padding k/2 unless set).
#[derive(Clone, Copy, Debug)]
pub struct ConvSpec {
    pub cout: usize,
    pub k: usize,
    pub stride: usize,
    pub pad: usize,
    pub group: usize,
    pub bias: bool,
}

impl ConvSpec {
    pub fn new(cout: usize, k: usize, stride: usize) -> Self {
        ConvSpec {
            cout,
            k,
            stride,
            pad: k / 2,
            group: 1,
            bias: false,
        }
    }
    pub fn pad(mut self, p: usize) -> Self {
        self.pad = p;
        self
    }
    pub fn group(mut self, g: usize) -> Self {
        self.group = g;
        self
    }
    pub fn bias(mut self) -> Self {
        self.bias = true;
        self
    }
}

pub struct Builder {
    pub g: Graph,
    rng: WeightRng,
    random: bool,
    /// Fold BatchNorm into the preceding conv (PyTorch's eval-mode export) or keep it as a node.
    pub fold_bn: bool,
    /// BatchNorm epsilon (PyTorch default 1e-5; torchvision MobileNetV3 uses 1e-3).
    pub bn_eps: f32,
    names: HashSet<String>,
    /// Bytes of random weight data made so far, and the first weight that could not be
    /// made (too large for memory): `finish` reports it instead of aborting on allocation.
    weight_bytes: u64,
    too_large: Option<String>,
    /// Memory available when the first weight was made.
    budget: Option<Option<u64>>,
}

impl Builder {
    pub fn new(name: &str, p: &Params) -> Result<Builder> {
        Ok(Builder {
            g: Graph::new(name),
            rng: WeightRng::new(p.seed()?),
            random: p.random_weights()?,
            fold_bn: true,
            bn_eps: 1e-5,
            names: HashSet::new(),
            weight_bytes: 0,
            too_large: None,
            budget: None,
        })
    }

    pub fn has_data(&self) -> bool {
        self.random
    }

    /// A name not used yet: `base`, else `base_1`, `base_2`, ...
    pub fn unique(&mut self, base: &str) -> String {
        let mut n = base.to_string();
        let mut i = 1;
        while self.names.contains(&n) {
            n = format!("{base}_{i}");
            i += 1;
        }
        self.names.insert(n.clone());
        n
    }

    pub fn input(&mut self, name: &str, shape: &[usize]) -> ValueId {
        let n = self.unique(name);
        self.g
            .add_input(n, TensorType::new(DType::F32, shape.to_vec()))
    }

    /// A random f32 weight (data from `gen(rng, numel)`), shape-only with `weights=none`.
    pub fn weight(
        &mut self,
        name: &str,
        shape: &[usize],
        make: impl FnOnce(&mut WeightRng, usize) -> Vec<f32>,
    ) -> ValueId {
        let n = self.unique(name);
        let bytes = pimkit_ir::checked_bytes(shape, 4);
        if self.random && self.too_large.is_none() {
            let total = bytes.map(|b| b.saturating_add(self.weight_bytes));
            self.too_large = match total {
                None => Some(format!(
                    "weight '{n}': {}",
                    pimkit_ir::too_large(shape, pimkit_ir::DType::F32)
                )),
                Some(t) => pimkit_ir::memory::check_fits_in(
                    t,
                    *self
                        .budget
                        .get_or_insert_with(pimkit_ir::memory::available_bytes),
                    &format!("random weight data up to '{n}' {shape:?}"),
                )
                .err()
                .map(|msg| {
                    format!(
                        "{msg} (weights=none builds the shapes only, enough for info, dump and lower)"
                    )
                }),
            };
        }
        if self.random && self.too_large.is_none() {
            self.weight_bytes += bytes.unwrap_or(0);
            let data = make(&mut self.rng, shape.iter().product());
            self.g.add_const(n, Tensor::from_f32(shape.to_vec(), data))
        } else {
            self.g
                .add_const_shape(n, TensorType::new(DType::F32, shape.to_vec()))
        }
    }

    /// A deterministic f32 constant (epsilon, rotary tables); shape-only with `weights=none`
    /// like every other constant.
    pub fn constant(
        &mut self,
        name: &str,
        shape: &[usize],
        data: impl FnOnce() -> Vec<f32>,
    ) -> ValueId {
        self.weight(name, shape, |_, _| data())
    }

    pub fn scalar(&mut self, name: &str, v: f32) -> ValueId {
        self.constant(name, &[], || vec![v])
    }

    /// A constant of any dtype given as a tensor builder.
    pub fn tensor_const(
        &mut self,
        name: &str,
        ty: TensorType,
        data: impl FnOnce() -> Tensor,
    ) -> ValueId {
        let n = self.unique(name);
        if self.random {
            self.g.add_const(n, data())
        } else {
            self.g.add_const_shape(n, ty)
        }
    }

    /// Build the nodes of one framework call with `f` and mark them as its parts
    /// (`Node::source`), as PyTorch's dynamo exporter does when one call (e.g.
    /// `F.scaled_dot_product_attention`, `F.silu`) exports as several ONNX nodes.
    pub fn call<T>(&mut self, source: &str, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let first = self.g.nodes.len();
        let r = f(self)?;
        for n in &mut self.g.nodes[first..] {
            n.source = Some(source.to_string());
        }
        Ok(r)
    }

    /// Append a node named `name` (made unique); its single output carries the same name.
    pub fn node(&mut self, name: &str, op: Op, inputs: &[ValueId]) -> Result<ValueId> {
        let n = self.unique(name);
        Ok(self.g.op(n, op, inputs)?)
    }

    /// Append a multi-output node or one with omitted optional inputs.
    pub fn node_multi(
        &mut self,
        name: &str,
        op: Op,
        inputs: Vec<Option<ValueId>>,
    ) -> Result<Vec<ValueId>> {
        let n = self.unique(name);
        Ok(self.g.add_node(n, op, inputs)?)
    }

    pub fn shape(&self, v: ValueId) -> Vec<usize> {
        self.g.ty(v).shape.clone()
    }

    fn conv_node(
        &mut self,
        name: &str,
        x: ValueId,
        s: ConvSpec,
        w: ValueId,
        b: Option<ValueId>,
    ) -> Result<ValueId> {
        let attrs = ConvAttrs::simple(vec![s.k, s.k], s.stride, s.pad, s.group);
        let mut ins = vec![Some(x), Some(w)];
        if let Some(b) = b {
            ins.push(Some(b));
        }
        Ok(self.node_multi(name, Op::Conv(attrs), ins)?[0])
    }

    fn conv_weight_shape(&self, x: ValueId, s: ConvSpec) -> Result<(Vec<usize>, usize)> {
        let cin = self.g.ty(x).shape.get(1).copied().unwrap_or(0);
        if s.group == 0 || cin % s.group != 0 {
            return Err(ZooError::Internal {
                entry: self.g.name.clone(),
                msg: format!("{cin} channels do not split into {} groups", s.group),
            });
        }
        let per = cin / s.group;
        Ok((vec![s.cout, per, s.k, s.k], per * s.k * s.k))
    }

    /// Plain Conv (module `m`: weight `m.weight`, bias `m.bias`).
    pub fn conv(&mut self, m: &str, x: ValueId, s: ConvSpec, gain: f32) -> Result<ValueId> {
        let (wshape, fan_in) = self.conv_weight_shape(x, s)?;
        let w = self.weight(&format!("{m}.weight"), &wshape, |r, n| {
            r.kaiming(n, fan_in, gain)
        });
        let b = s.bias.then(|| {
            self.weight(&format!("{m}.bias"), &[s.cout], |r, n| {
                r.uniform(n, -0.05, 0.05)
            })
        });
        self.conv_node(m, x, s, w, b)
    }

    /// Conv (module `m`) followed by BatchNorm (module `bn`): one Conv with folded weights
    /// and bias when `fold_bn`, else Conv + BatchNormalization.
    pub fn conv_bn(
        &mut self,
        m: &str,
        bn: &str,
        x: ValueId,
        s: ConvSpec,
        gain: f32,
    ) -> Result<ValueId> {
        if !self.fold_bn {
            let y = self.conv(m, x, s, gain)?;
            return self.batchnorm(bn, y);
        }
        let (wshape, fan_in) = self.conv_weight_shape(x, s)?;
        let c = s.cout;
        let (wname, bname) = (format!("{m}.weight"), format!("{m}.bias"));
        let eps = self.bn_eps;
        let (w, b) = if self.random {
            let mut w = self.rng.kaiming(wshape.iter().product(), fan_in, gain);
            let mut b = if s.bias {
                self.rng.uniform(c, -0.05, 0.05)
            } else {
                vec![0.0; c]
            };
            let st = self.rng.batchnorm(c);
            init::fold_bn(&mut w, &mut b, &[&st[0], &st[1], &st[2], &st[3]], eps);
            (
                self.weight(&wname, &wshape, |_, _| w),
                self.weight(&bname, &[c], |_, _| b),
            )
        } else {
            (
                self.weight(&wname, &wshape, |_, _| vec![]),
                self.weight(&bname, &[c], |_, _| vec![]),
            )
        };
        self.conv_node(m, x, s, w, Some(b))
    }

    /// BatchNormalization node (module `m`) over channel axis 1.
    pub fn batchnorm(&mut self, m: &str, x: ValueId) -> Result<ValueId> {
        let c = self.g.ty(x).shape[1];
        let st = if self.random {
            self.rng.batchnorm(c)
        } else {
            Default::default()
        };
        let [g, b, mean, var] = st;
        let ids = [
            self.weight(&format!("{m}.weight"), &[c], |_, _| g),
            self.weight(&format!("{m}.bias"), &[c], |_, _| b),
            self.weight(&format!("{m}.running_mean"), &[c], |_, _| mean),
            self.weight(&format!("{m}.running_var"), &[c], |_, _| var),
        ];
        let mut ins = vec![x];
        ins.extend(ids);
        self.node(
            m,
            Op::BatchNorm {
                epsilon: self.bn_eps,
            },
            &ins,
        )
    }

    /// Conv + BN + activation; the activation node is named `act_name`.
    pub fn conv_bn_act(
        &mut self,
        m: &str,
        bn: &str,
        act_name: &str,
        x: ValueId,
        s: ConvSpec,
        act: Act,
    ) -> Result<ValueId> {
        let y = self.conv_bn(m, bn, x, s, act.gain())?;
        self.act(act_name, y, act)
    }

    pub fn act(&mut self, name: &str, x: ValueId, act: Act) -> Result<ValueId> {
        let op = match act {
            Act::None => return Ok(x),
            Act::Relu => Op::Unary(UnaryOp::Relu),
            Act::Relu6 => Op::Clip {
                min: Some(0.0),
                max: Some(6.0),
            },
            Act::HardSwish => Op::Unary(UnaryOp::HardSwish),
            Act::HardSigmoid => Op::Unary(UnaryOp::HardSigmoid {
                alpha: 1.0 / 6.0,
                beta: 0.5,
            }),
            Act::Sigmoid => Op::Unary(UnaryOp::Sigmoid),
        };
        self.node(name, op, &[x])
    }

    pub fn binary(&mut self, name: &str, op: BinaryOp, a: ValueId, b: ValueId) -> Result<ValueId> {
        self.node(name, Op::Binary(op), &[a, b])
    }

    /// nn.Linear on a 2-D input: Gemm(transB=1) with weight [out, in] when it has a bias
    /// (torch exports addmm), MatMul with the transposed weight [in, out] when it has none.
    pub fn linear(
        &mut self,
        m: &str,
        x: ValueId,
        out: usize,
        bias: bool,
        gain: f32,
    ) -> Result<ValueId> {
        let inf = *self.g.ty(x).shape.last().unwrap_or(&1);
        if bias {
            let w = self.weight(&format!("{m}.weight"), &[out, inf], |r, n| {
                r.kaiming(n, inf, gain)
            });
            let b = self.weight(&format!("{m}.bias"), &[out], |r, n| {
                r.uniform(n, -0.05, 0.05)
            });
            self.node(
                m,
                Op::Gemm {
                    alpha: 1.0,
                    beta: 1.0,
                    trans_a: false,
                    trans_b: true,
                },
                &[x, w, b],
            )
        } else {
            let w = self.weight(&format!("{m}.weight"), &[inf, out], |r, n| {
                r.kaiming(n, inf, gain)
            });
            self.node(m, Op::MatMul, &[x, w])
        }
    }

    pub fn maxpool(
        &mut self,
        name: &str,
        x: ValueId,
        k: usize,
        s: usize,
        pad: usize,
        ceil: bool,
    ) -> Result<ValueId> {
        let op = Op::Pool(PoolAttrs {
            kind: PoolKind::Max,
            kernel: vec![k, k],
            strides: vec![s, s],
            pads: vec![pad; 4],
            dilations: vec![1, 1],
            ceil_mode: ceil,
            count_include_pad: false,
        });
        self.node(name, op, &[x])
    }

    pub fn global_avg_pool(&mut self, name: &str, x: ValueId) -> Result<ValueId> {
        self.node(name, Op::GlobalPool(PoolKind::Avg), &[x])
    }

    /// torch.flatten(x, 1) exported with a static shape: Reshape to [N, rest].
    pub fn flatten(&mut self, name: &str, x: ValueId) -> Result<ValueId> {
        let s = self.shape(x);
        let rest: usize = s[1..].iter().product();
        self.node(
            name,
            Op::Reshape {
                shape: vec![s[0], rest],
            },
            &[x],
        )
    }

    pub fn reshape(&mut self, name: &str, x: ValueId, shape: &[usize]) -> Result<ValueId> {
        self.node(
            name,
            Op::Reshape {
                shape: shape.to_vec(),
            },
            &[x],
        )
    }

    /// Set the outputs, then verify the whole graph.
    pub fn finish(mut self, outputs: &[ValueId]) -> Result<Graph> {
        if let Some(msg) = self.too_large.take() {
            return Err(crate::ZooError::Invalid {
                entry: self.g.name.clone(),
                msg,
            });
        }
        self.g.outputs = outputs.to_vec();
        pimkit_ir::verify(&self.g)?;
        Ok(self.g)
    }
}
