//! Quantized (QOperator) ops.

use super::Lowerer;
use crate::error::Result;
use crate::ir::TensorId;
use pimkit_ir::{ConvAttrs, DType, Node};

fn todo(l: &Lowerer) -> crate::error::LoopsError {
    l.unsupported("quantized ops are not lowered yet")
}

pub(crate) fn quantize(l: &mut Lowerer, _n: &Node, _axis: usize, _to: DType) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn dequantize(l: &mut Lowerer, _n: &Node, _axis: usize) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn qlinear_matmul(l: &mut Lowerer, _n: &Node) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn qlinear_conv(l: &mut Lowerer, _n: &Node, _a: &ConvAttrs) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn matmul_integer(l: &mut Lowerer, _n: &Node) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn conv_integer(l: &mut Lowerer, _n: &Node, _a: &ConvAttrs) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn qlinear_binary(l: &mut Lowerer, _n: &Node, _mul: bool) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn qlinear_concat(l: &mut Lowerer, _n: &Node, _axis: usize) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn qlinear_gap(l: &mut Lowerer, _n: &Node, _cl: bool) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn qgemm(
    l: &mut Lowerer,
    _n: &Node,
    _alpha: f32,
    _ta: bool,
    _tb: bool,
) -> Result<TensorId> {
    Err(todo(l))
}
pub(crate) fn qlinear_unary(l: &mut Lowerer, _n: &Node, _alpha: Option<f32>) -> Result<TensorId> {
    Err(todo(l))
}
