//! ONNX's type constraints for binary ops on bool: logic ops need bool, arithmetic and
//! ordering ops have no bool form (the interpreter and the loop lowering agree).

use pimkit_ir::{BinaryOp, DType, Graph, Op, TensorType};

fn binary(op: BinaryOp, dt: DType) -> Result<(), String> {
    let mut g = Graph::new("b");
    let x = g.add_input("x", TensorType::new(dt, vec![2]));
    g.op("n", Op::Binary(op), &[x, x])
        .map(|_| ())
        .map_err(|e| e.to_string())
}

#[test]
fn bool_operands_follow_onnx_type_constraints() {
    for op in [BinaryOp::Add, BinaryOp::Mul, BinaryOp::Max, BinaryOp::Less] {
        let e = binary(op, DType::Bool).unwrap_err();
        assert!(e.contains("'n'") && e.contains("numeric"), "{e}");
        assert!(binary(op, DType::F32).is_ok());
    }
    for op in [BinaryOp::And, BinaryOp::Or, BinaryOp::Xor] {
        assert!(binary(op, DType::Bool).is_ok());
        let e = binary(op, DType::I32).unwrap_err();
        assert!(e.contains("bool"), "{e}");
    }
    assert!(binary(BinaryOp::Equal, DType::Bool).is_ok());
}
