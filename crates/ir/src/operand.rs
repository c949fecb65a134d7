//! Named operand positions: the index of each input in a node's `inputs`, per op family,
//! so engines write `n.input(qlinear_conv::W_ZERO_POINT)` instead of `n.inputs.get(5)`.
//!
//! The order is the ONNX operator spec's input order (<https://onnx.ai/onnx/operators/>;
//! the com.microsoft contrib ops follow onnxruntime's docs/ContribOperators.md). Operands
//! the importer folds into attributes (Clip's bounds, Resize's scales, Reshape's shape...)
//! are not node inputs and have no constant here. `Op`'s doc comments list the same order.

/// One-input ops (Unary, Clip, Cast, Pool, Softmax, Reduce, Reshape, Transpose, Slice, ...).
pub mod unary {
    pub const X: usize = 0;
}

/// Binary elementwise ops (Add, Sub, Mul, Div, Pow, comparisons, ...): A, B.
pub mod binary {
    pub const A: usize = 0;
    pub const B: usize = 1;
}

/// Where: condition, X, Y.
pub mod where_op {
    pub const CONDITION: usize = 0;
    pub const X: usize = 1;
    pub const Y: usize = 2;
}

/// Conv, ConvTranspose: X, W, B (bias, optional).
pub mod conv {
    pub const X: usize = 0;
    pub const W: usize = 1;
    pub const B: usize = 2;
}

/// PRelu: X, slope.
pub mod prelu {
    pub const X: usize = 0;
    pub const SLOPE: usize = 1;
}

/// Gemm: A, B, C (optional). MatMul: A, B.
pub mod gemm {
    pub const A: usize = 0;
    pub const B: usize = 1;
    pub const C: usize = 2;
}

/// BatchNormalization: X, scale, B, input_mean, input_var.
pub mod batch_norm {
    pub const X: usize = 0;
    pub const SCALE: usize = 1;
    pub const B: usize = 2;
    pub const INPUT_MEAN: usize = 3;
    pub const INPUT_VAR: usize = 4;
}

/// LayerNormalization: X, Scale, B (optional).
pub mod layer_norm {
    pub const X: usize = 0;
    pub const SCALE: usize = 1;
    pub const B: usize = 2;
}

/// LSTM, GRU, RNN: X, W, R, B?, sequence_lens?, initial_h?, initial_c? (LSTM only), P?
/// (LSTM's peepholes; the importer rejects them).
pub mod rnn {
    pub const X: usize = 0;
    pub const W: usize = 1;
    pub const R: usize = 2;
    pub const B: usize = 3;
    pub const SEQUENCE_LENS: usize = 4;
    pub const INITIAL_H: usize = 5;
    pub const INITIAL_C: usize = 6;
}

/// QuantizeLinear: x, y_scale, y_zero_point?. DequantizeLinear: x, x_scale,
/// x_zero_point?. The same positions under both names: the scale and zero point of the
/// quantized side.
pub mod quantize_linear {
    pub const X: usize = 0;
    pub const SCALE: usize = 1;
    pub const ZERO_POINT: usize = 2;
}

/// QLinearMatMul: a, a_scale, a_zero_point, b, b_scale, b_zero_point, y_scale,
/// y_zero_point. com.microsoft QLinearAdd/QLinearMul use the same order (their C_scale,
/// C_zero_point are Y_SCALE, Y_ZERO_POINT here).
pub mod qlinear_matmul {
    pub const A: usize = 0;
    pub const A_SCALE: usize = 1;
    pub const A_ZERO_POINT: usize = 2;
    pub const B: usize = 3;
    pub const B_SCALE: usize = 4;
    pub const B_ZERO_POINT: usize = 5;
    pub const Y_SCALE: usize = 6;
    pub const Y_ZERO_POINT: usize = 7;
}

/// com.microsoft QLinearAdd, QLinearMul: the order of [`qlinear_matmul`].
pub use qlinear_matmul as qlinear_binary;

/// QLinearConv: x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale,
/// y_zero_point, B (i32 bias, optional).
pub mod qlinear_conv {
    pub const X: usize = 0;
    pub const X_SCALE: usize = 1;
    pub const X_ZERO_POINT: usize = 2;
    pub const W: usize = 3;
    pub const W_SCALE: usize = 4;
    pub const W_ZERO_POINT: usize = 5;
    pub const Y_SCALE: usize = 6;
    pub const Y_ZERO_POINT: usize = 7;
    pub const B: usize = 8;
}

/// com.microsoft QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point, C? (i32),
/// y_scale?, y_zero_point? (without y_scale the output is f32).
pub mod qgemm {
    pub const A: usize = 0;
    pub const A_SCALE: usize = 1;
    pub const A_ZERO_POINT: usize = 2;
    pub const B: usize = 3;
    pub const B_SCALE: usize = 4;
    pub const B_ZERO_POINT: usize = 5;
    pub const C: usize = 6;
    pub const Y_SCALE: usize = 7;
    pub const Y_ZERO_POINT: usize = 8;
}

/// MatMulInteger: A, B, a_zero_point?, b_zero_point?.
pub mod matmul_integer {
    pub const A: usize = 0;
    pub const B: usize = 1;
    pub const A_ZERO_POINT: usize = 2;
    pub const B_ZERO_POINT: usize = 3;
}

/// ConvInteger: x, w, x_zero_point?, w_zero_point?.
pub mod conv_integer {
    pub const X: usize = 0;
    pub const W: usize = 1;
    pub const X_ZERO_POINT: usize = 2;
    pub const W_ZERO_POINT: usize = 3;
}

/// com.microsoft one-input quantized ops (QLinearSigmoid, QLinearLeakyRelu,
/// QLinearGlobalAveragePool, QLinearAveragePool, QLinearSoftmax): X, X_scale,
/// X_zero_point, Y_scale, Y_zero_point.
pub mod qlinear_unary {
    pub const X: usize = 0;
    pub const X_SCALE: usize = 1;
    pub const X_ZERO_POINT: usize = 2;
    pub const Y_SCALE: usize = 3;
    pub const Y_ZERO_POINT: usize = 4;
}

/// com.microsoft QLinearConcat: Y_scale, Y_zero_point, then one (X, X_scale,
/// X_zero_point) triple per concatenated input.
pub mod qlinear_concat {
    pub const Y_SCALE: usize = 0;
    pub const Y_ZERO_POINT: usize = 1;
    /// Position of the first triple's X; triple `k` starts at `FIRST + k * STRIDE`.
    pub const FIRST: usize = 2;
    pub const STRIDE: usize = 3;
    /// Offsets inside a triple.
    pub const SCALE_OFFSET: usize = 1;
    pub const ZERO_POINT_OFFSET: usize = 2;
}

/// com.microsoft QLinearWhere: condition, X, x_scale, x_zero_point, Y, y_scale,
/// y_zero_point, z_scale, z_zero_point.
pub mod qlinear_where {
    pub const CONDITION: usize = 0;
    pub const X: usize = 1;
    pub const X_SCALE: usize = 2;
    pub const X_ZERO_POINT: usize = 3;
    pub const Y: usize = 4;
    pub const Y_SCALE: usize = 5;
    pub const Y_ZERO_POINT: usize = 6;
    pub const Z_SCALE: usize = 7;
    pub const Z_ZERO_POINT: usize = 8;
}

/// Gather, GatherElements, GatherND, Compress (its `condition` is INDICES' slot),
/// MaxUnpool (X, I), ReverseSequence (input, sequence_lens): data, indices.
pub mod gather {
    pub const DATA: usize = 0;
    pub const INDICES: usize = 1;
}

/// ScatterElements, ScatterND: data, indices, updates.
pub mod scatter {
    pub const DATA: usize = 0;
    pub const INDICES: usize = 1;
    pub const UPDATES: usize = 2;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Op;

    /// The names agree with `Op::scale_inputs` and `Op::zero_point_inputs`, which the
    /// verifier uses, so the two descriptions of operand order cannot drift apart.
    #[test]
    fn names_agree_with_the_quantization_tables() {
        let conv = Op::QLinearConv(crate::ConvAttrs::simple(vec![3, 3], 1, 1, 1));
        assert_eq!(
            conv.scale_inputs(9),
            [
                qlinear_conv::X_SCALE,
                qlinear_conv::W_SCALE,
                qlinear_conv::Y_SCALE
            ]
        );
        assert_eq!(
            Op::QLinearMatMul.zero_point_inputs(8),
            [
                (qlinear_matmul::A_ZERO_POINT, qlinear_matmul::A),
                (qlinear_matmul::B_ZERO_POINT, qlinear_matmul::B)
            ]
        );
        let q_gemm = Op::QGemm {
            alpha: 1.0,
            trans_a: false,
            trans_b: false,
        };
        assert_eq!(
            q_gemm.scale_inputs(9),
            [qgemm::A_SCALE, qgemm::B_SCALE, qgemm::Y_SCALE]
        );
        assert_eq!(
            Op::QLinearWhere.scale_inputs(9),
            [
                qlinear_where::X_SCALE,
                qlinear_where::Y_SCALE,
                qlinear_where::Z_SCALE
            ]
        );
        assert_eq!(
            Op::QLinearSigmoid.scale_inputs(5),
            [qlinear_unary::X_SCALE, qlinear_unary::Y_SCALE]
        );
        assert_eq!(
            Op::MatMulInteger.zero_point_inputs(4),
            [
                (matmul_integer::A_ZERO_POINT, matmul_integer::A),
                (matmul_integer::B_ZERO_POINT, matmul_integer::B)
            ]
        );
        assert_eq!(
            Op::DequantizeLinear { axis: 0 }.zero_point_inputs(3),
            [(quantize_linear::ZERO_POINT, quantize_linear::X)]
        );
    }
}
