use serde::{Deserialize, Serialize};
use std::fmt;

/// Element types pimkit tensors can hold (the ONNX types real CNN, transformer and
/// quantized models use).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DType {
    F32,
    F16,
    I64,
    I32,
    I8,
    U8,
    Bool,
}

impl DType {
    /// Size of one element in bytes (bool is stored as one byte, as in ONNX).
    pub fn size(self) -> usize {
        match self {
            DType::F32 | DType::I32 => 4,
            DType::F16 => 2,
            DType::I64 => 8,
            DType::I8 | DType::U8 | DType::Bool => 1,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16)
    }

    /// 8-bit quantized integer types.
    pub fn is_quant8(self) -> bool {
        matches!(self, DType::I8 | DType::U8)
    }

    /// Saturation bounds of the 8-bit quantized types.
    pub fn quant_range(self) -> Option<(i32, i32)> {
        match self {
            DType::I8 => Some((-128, 127)),
            DType::U8 => Some((0, 255)),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::I64 => "i64",
            DType::I32 => "i32",
            DType::I8 => "i8",
            DType::U8 => "u8",
            DType::Bool => "bool",
        }
    }

    pub fn parse(s: &str) -> Option<DType> {
        Some(match s {
            "f32" => DType::F32,
            "f16" => DType::F16,
            "i64" => DType::I64,
            "i32" => DType::I32,
            "i8" => DType::I8,
            "u8" => DType::U8,
            "bool" => DType::Bool,
            _ => return None,
        })
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
