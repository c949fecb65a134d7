//! Typed access to a node's attributes with errors that name the node and attribute.

use crate::error::{OnnxError, Result};
use crate::proto::{AttributeProto, TensorProto, attribute_proto::AttributeType};

#[derive(Clone, Copy)]
pub struct Attrs<'a> {
    pub node: &'a str,
    pub op: &'a str,
    pub list: &'a [AttributeProto],
}

impl<'a> Attrs<'a> {
    pub fn err(&self, attr: &str, msg: impl Into<String>) -> OnnxError {
        OnnxError::Attribute {
            node: self.node.to_string(),
            op: self.op.to_string(),
            attr: attr.to_string(),
            msg: msg.into(),
        }
    }

    pub fn get(&self, name: &str) -> Option<&'a AttributeProto> {
        self.list.iter().find(|a| a.name() == name)
    }

    pub fn has(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The attribute's declared type; old models may omit it, so infer it from the
    /// field that is set.
    fn kind(a: &AttributeProto) -> AttributeType {
        match a.r#type() {
            AttributeType::Undefined => {
                if a.i.is_some() {
                    AttributeType::Int
                } else if a.f.is_some() {
                    AttributeType::Float
                } else if a.s.is_some() {
                    AttributeType::String
                } else if a.t.is_some() {
                    AttributeType::Tensor
                } else if !a.floats.is_empty() {
                    AttributeType::Floats
                } else if !a.ints.is_empty() {
                    AttributeType::Ints
                } else if !a.strings.is_empty() {
                    AttributeType::Strings
                } else if a.g.is_some() {
                    AttributeType::Graph
                } else {
                    AttributeType::Undefined
                }
            }
            t => t,
        }
    }

    fn want(&self, a: &AttributeProto, t: AttributeType) -> Result<()> {
        let k = Self::kind(a);
        if k == t {
            Ok(())
        } else {
            Err(self.err(
                a.name(),
                format!(
                    "expected type {}, found {}",
                    t.as_str_name(),
                    k.as_str_name()
                ),
            ))
        }
    }

    pub fn opt_int(&self, name: &str) -> Result<Option<i64>> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => {
                self.want(a, AttributeType::Int)?;
                Ok(Some(a.i()))
            }
        }
    }

    pub fn int(&self, name: &str, default: i64) -> Result<i64> {
        Ok(self.opt_int(name)?.unwrap_or(default))
    }

    pub fn bool(&self, name: &str, default: bool) -> Result<bool> {
        match self.opt_int(name)? {
            None => Ok(default),
            Some(0) => Ok(false),
            Some(1) => Ok(true),
            Some(v) => Err(self.err(name, format!("must be 0 or 1, got {v}"))),
        }
    }

    pub fn opt_float(&self, name: &str) -> Result<Option<f32>> {
        match self.get(name) {
            None => Ok(None),
            Some(_) => self.float(name, 0.0).map(Some),
        }
    }

    pub fn float(&self, name: &str, default: f32) -> Result<f32> {
        match self.get(name) {
            None => Ok(default),
            Some(a) => {
                self.want(a, AttributeType::Float)?;
                Ok(a.f())
            }
        }
    }

    pub fn ints(&self, name: &str) -> Result<Option<Vec<i64>>> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => {
                // An empty INTS list may carry no type in very old files.
                if a.r#type() != AttributeType::Undefined || !a.ints.is_empty() {
                    self.want(a, AttributeType::Ints)?;
                }
                Ok(Some(a.ints.clone()))
            }
        }
    }

    pub fn floats(&self, name: &str) -> Result<Option<Vec<f32>>> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => {
                self.want(a, AttributeType::Floats)?;
                Ok(Some(a.floats.clone()))
            }
        }
    }

    pub fn string(&self, name: &str) -> Result<Option<String>> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => {
                self.want(a, AttributeType::String)?;
                String::from_utf8(a.s().to_vec())
                    .map(Some)
                    .map_err(|_| self.err(name, "is not valid UTF-8"))
            }
        }
    }

    pub fn strings(&self, name: &str) -> Result<Option<Vec<String>>> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => {
                self.want(a, AttributeType::Strings)?;
                Ok(Some(
                    a.strings
                        .iter()
                        .map(|s| String::from_utf8_lossy(s).into_owned())
                        .collect(),
                ))
            }
        }
    }

    pub fn tensor(&self, name: &str) -> Result<Option<&'a TensorProto>> {
        match self.get(name) {
            None => Ok(None),
            Some(a) => {
                self.want(a, AttributeType::Tensor)?;
                Ok(a.t.as_ref())
            }
        }
    }

    /// A graph attribute (the body of If, Loop or Scan).
    pub fn graph(&self, name: &str) -> Result<&'a crate::proto::GraphProto> {
        let a = self
            .get(name)
            .ok_or_else(|| self.err(name, "is required"))?;
        self.want(a, AttributeType::Graph)?;
        a.g.as_ref().ok_or_else(|| self.err(name, "holds no graph"))
    }

    /// A non-negative int that fits in usize (sizes, counts, kernel extents).
    pub fn usize_list(&self, name: &str) -> Result<Option<Vec<usize>>> {
        match self.ints(name)? {
            None => Ok(None),
            Some(v) => v
                .iter()
                .map(|&x| {
                    to_dim(x).ok_or_else(|| self.err(name, format!("value {x} out of range")))
                })
                .collect::<Result<Vec<_>>>()
                .map(Some),
        }
    }
}

/// A size from the file: non-negative and below 2^32 so that products stay in range.
pub fn to_dim(v: i64) -> Option<usize> {
    (0..=(u32::MAX as i64)).contains(&v).then_some(v as usize)
}

/// Normalize a possibly negative axis against `rank`.
pub fn norm_axis(axis: i64, rank: usize) -> Option<usize> {
    let r = rank as i64;
    let a = if axis < 0 { axis + r } else { axis };
    (0..r.max(1)).contains(&a).then_some(a as usize)
}
