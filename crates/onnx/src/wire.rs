//! Where in the file a protobuf decode failed. prost's errors name the field path
//! (`GraphProto.node: NodeProto.input: ...`) but not the byte: this walks the protobuf
//! wire format, descending into the messages that hold most of a model (graph, nodes,
//! attributes, tensors, value infos), and returns the offset of the first field that does
//! not parse, or the start of the innermost message that prost refuses.

use crate::proto::{AttributeProto, GraphProto, NodeProto, TensorProto, ValueInfoProto};
use prost::Message;
use prost::bytes::Buf;
use prost::encoding::{WireType, decode_key, decode_varint};

#[derive(Clone, Copy)]
enum Kind {
    Model,
    Graph,
    Node,
    Attribute,
    Tensor,
    ValueInfo,
}

impl Kind {
    /// The message type held by field `tag` of this message, where worth descending.
    fn child(self, tag: u32) -> Option<Kind> {
        match (self, tag) {
            (Kind::Model, 7) => Some(Kind::Graph),
            (Kind::Graph, 1) => Some(Kind::Node),
            (Kind::Graph, 5) => Some(Kind::Tensor),
            (Kind::Graph, 11..=13) => Some(Kind::ValueInfo),
            (Kind::Node, 5) => Some(Kind::Attribute),
            (Kind::Attribute, 5 | 10) => Some(Kind::Tensor),
            (Kind::Attribute, 6 | 11) => Some(Kind::Graph),
            _ => None,
        }
    }

    fn decodes(self, b: &[u8]) -> bool {
        match self {
            Kind::Model => crate::proto::ModelProto::decode(b).is_ok(),
            Kind::Graph => GraphProto::decode(b).is_ok(),
            Kind::Node => NodeProto::decode(b).is_ok(),
            Kind::Attribute => AttributeProto::decode(b).is_ok(),
            Kind::Tensor => TensorProto::decode(b).is_ok(),
            Kind::ValueInfo => ValueInfoProto::decode(b).is_ok(),
        }
    }
}

/// Deepest message nesting walked (protobuf's own decoders stop at 100): a hostile file
/// nested 100,000 deep must not overflow the stack.
pub const MAX_DEPTH: usize = 100;

/// Byte offset of the decode failure in a ModelProto that prost rejected.
pub fn error_offset(bytes: &[u8]) -> usize {
    locate(Kind::Model, bytes, 0, 0)
}

fn locate(kind: Kind, msg: &[u8], base: usize, depth: usize) -> usize {
    if depth >= MAX_DEPTH {
        return base;
    }
    let mut buf = msg;
    loop {
        let pos = base + (msg.len() - buf.len());
        if !buf.has_remaining() {
            // Every field parses: prost refused a value (a string that is not UTF-8, an
            // out-of-range enum); point at the message.
            return base;
        }
        let Ok((tag, wt)) = decode_key(&mut buf) else {
            return pos;
        };
        let ok = match wt {
            WireType::Varint => decode_varint(&mut buf).is_ok(),
            WireType::SixtyFourBit => skip(&mut buf, 8),
            WireType::ThirtyTwoBit => skip(&mut buf, 4),
            WireType::LengthDelimited => {
                let Ok(len) = decode_varint(&mut buf) else {
                    return pos;
                };
                if len > buf.remaining() as u64 {
                    return pos;
                }
                let start = base + (msg.len() - buf.len());
                let payload = &buf[..len as usize];
                if let Some(child) = kind.child(tag)
                    && !child.decodes(payload)
                {
                    return locate(child, payload, start, depth + 1);
                }
                buf.advance(len as usize);
                true
            }
            // Groups are not used by ONNX.
            WireType::StartGroup | WireType::EndGroup => false,
        };
        if !ok {
            return pos;
        }
    }
}

fn skip(buf: &mut &[u8], n: usize) -> bool {
    if buf.remaining() < n {
        return false;
    }
    buf.advance(n);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::ModelProto;

    #[test]
    fn points_into_a_node_with_a_broken_field() {
        let node = NodeProto {
            op_type: Some("Relu".into()),
            input: vec!["x".into()],
            ..Default::default()
        };
        let m = ModelProto {
            ir_version: Some(8),
            graph: Some(GraphProto {
                node: vec![node],
                ..Default::default()
            }),
            ..Default::default()
        };
        let mut b = m.encode_to_vec();
        // The input name's last byte becomes a lone UTF-8 continuation byte.
        let at = b.iter().rposition(|&c| c == b'x').unwrap();
        b[at] = 0x80;
        assert!(ModelProto::decode(&b[..]).is_err());
        let off = error_offset(&b);
        assert!(off > 0 && off < b.len(), "offset {off} of {}", b.len());
        // A length past the end is reported at its field.
        let mut t = m.encode_to_vec();
        t.truncate(t.len() - 1);
        assert!(error_offset(&t) < t.len());
    }

    /// An If whose then-branch holds an If whose then-branch ... `depth` levels deep.
    fn nested(depth: usize) -> Vec<u8> {
        let mut g = GraphProto::default();
        for _ in 0..depth {
            let attr = AttributeProto {
                name: Some("then_branch".into()),
                r#type: Some(5),
                g: Some(g),
                ..Default::default()
            };
            let node = NodeProto {
                op_type: Some("If".into()),
                attribute: vec![attr],
                ..Default::default()
            };
            g = GraphProto {
                node: vec![node],
                ..Default::default()
            };
        }
        let m = ModelProto {
            ir_version: Some(8),
            graph: Some(g),
            ..Default::default()
        };
        let b = m.encode_to_vec();
        // Dropping a deeply nested message recurses too: leak it (a test, once).
        std::mem::forget(m);
        b
    }

    #[test]
    fn deep_nesting_stops_at_the_limit_instead_of_the_stack() {
        // Encoded here 3,000 deep (prost's encoder recurses as well); the walk stops at
        // MAX_DEPTH levels of messages, each level of the file being three.
        let b = nested(3000);
        assert!(ModelProto::decode(&b[..]).is_err());
        let off = std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || error_offset(&b))
            .unwrap()
            .join()
            .expect("the walk must not overflow a 256 KiB stack");
        assert!(off > 0);
    }
}
