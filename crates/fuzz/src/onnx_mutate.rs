//! Structure-aware mutations of an ONNX model: decode, change one thing a byte flip
//! rarely reaches intact (an op type, a wiring, an attribute, a dim, an opset), encode.

use pimkit_onnx::proto::{ModelProto, tensor_shape_proto::dimension, type_proto};
use prost::Message;
use rand::{Rng, RngExt};

const INTS: [i64; 12] = [
    0,
    1,
    -1,
    2,
    3,
    -2,
    7,
    1 << 31,
    1 << 40,
    i64::MAX,
    i64::MIN,
    65536,
];
const FLOATS: [f32; 8] = [
    0.0,
    -1.0,
    1e30,
    -1e-30,
    f32::NAN,
    f32::INFINITY,
    f32::NEG_INFINITY,
    0.5,
];

/// A mutated copy of the model in `bytes`, or `None` when it does not decode.
pub fn mutate(rng: &mut impl Rng, bytes: &[u8]) -> Option<Vec<u8>> {
    let mut m = ModelProto::decode(bytes).ok()?;
    for _ in 0..rng.random_range(1..=3) {
        edit(rng, &mut m);
    }
    Some(m.encode_to_vec())
}

fn pick<T>(rng: &mut impl Rng, v: &[T]) -> Option<usize> {
    (!v.is_empty()).then(|| rng.random_range(0..v.len()))
}

fn edit(rng: &mut impl Rng, m: &mut ModelProto) {
    let ops = pimkit_onnx::supported_ops();
    let Some(g) = m.graph.as_mut() else {
        return;
    };
    let names: Vec<String> = g
        .node
        .iter()
        .flat_map(|n| n.output.iter().cloned())
        .chain(g.input.iter().map(|v| v.name().to_string()))
        .chain(g.initializer.iter().map(|t| t.name().to_string()))
        .collect();
    match rng.random_range(0..10) {
        0 => {
            if let Some(i) = pick(rng, &g.node)
                && let Some(k) = pick(rng, &ops)
            {
                g.node[i].op_type = Some(ops[k].1.to_string());
                g.node[i].domain = Some(ops[k].0.to_string());
            }
        }
        1 => {
            if let Some(i) = pick(rng, &g.node) {
                let n = &mut g.node[i];
                let new = match (rng.random_range(0..4), pick(rng, &names)) {
                    (0, _) => String::new(),
                    (1, _) => "no_such_value".into(),
                    (_, Some(k)) => names[k].clone(),
                    _ => return,
                };
                match pick(rng, &n.input) {
                    Some(j) if rng.random_bool(0.7) => n.input[j] = new,
                    Some(j) => {
                        n.input.remove(j);
                    }
                    None => n.input.push(new),
                }
            }
        }
        2 => {
            if let Some(i) = pick(rng, &g.node)
                && let Some(j) = pick(rng, &g.node[i].attribute)
            {
                let a = &mut g.node[i].attribute[j];
                if a.i.is_some() {
                    a.i = Some(INTS[rng.random_range(0..INTS.len())]);
                } else if !a.ints.is_empty() {
                    let k = rng.random_range(0..a.ints.len());
                    match rng.random_range(0..3) {
                        0 => a.ints[k] = INTS[rng.random_range(0..INTS.len())],
                        1 => {
                            a.ints.remove(k);
                        }
                        _ => a.ints.push(INTS[rng.random_range(0..INTS.len())]),
                    }
                } else if a.f.is_some() {
                    a.f = Some(FLOATS[rng.random_range(0..FLOATS.len())]);
                } else if rng.random_bool(0.5) {
                    g.node[i].attribute.remove(j);
                }
            }
        }
        3 => {
            if let Some(i) = pick(rng, &g.initializer)
                && let Some(k) = pick(rng, &g.initializer[i].dims)
            {
                g.initializer[i].dims[k] = INTS[rng.random_range(0..INTS.len())];
            }
        }
        4 => {
            if let Some(i) = pick(rng, &g.input)
                && let Some(type_proto::Value::TensorType(tt)) =
                    g.input[i].r#type.as_mut().and_then(|t| t.value.as_mut())
                && let Some(s) = tt.shape.as_mut()
                && let Some(k) = pick(rng, &s.dim)
            {
                s.dim[k].value = Some(match rng.random_range(0..3) {
                    0 => dimension::Value::DimParam("N".into()),
                    _ => dimension::Value::DimValue(INTS[rng.random_range(0..6)]),
                });
            }
        }
        5 => {
            if let Some(i) = pick(rng, &g.node) {
                let n = g.node[i].clone();
                let j = rng.random_range(0..=g.node.len());
                g.node.insert(j, n);
            }
        }
        6 => {
            if let Some(i) = pick(rng, &g.node) {
                g.node.remove(i);
            }
        }
        7 => {
            if let Some(i) = pick(rng, &g.initializer) {
                g.initializer[i].data_type = Some(rng.random_range(0..27));
            }
        }
        8 => {
            if let Some(i) = pick(rng, &g.node)
                && let Some(j) = pick(rng, &g.node)
            {
                g.node.swap(i, j);
            }
        }
        _ => {
            if let Some(i) = pick(rng, &m.opset_import) {
                m.opset_import[i].version = Some(rng.random_range(1..26));
            }
        }
    }
}
