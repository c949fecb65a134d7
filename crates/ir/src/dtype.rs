use serde::{Deserialize, Serialize};
use std::fmt;

/// Element types pimkit tensors can hold: every ONNX tensor type except strings and
/// complex numbers. The 8-bit float formats and the 4- and 2-bit types are stored one
/// element per byte (the code in the low bits, see [`crate::minifloat`]); they are
/// produced and consumed by Cast, QuantizeLinear and DequantizeLinear.
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
    F64,
    Bf16,
    I16,
    U16,
    U32,
    U64,
    /// float8 e4m3fn: no infinities, NaN = S.1111.111, max 448.
    F8E4M3Fn,
    /// float8 e4m3fnuz: no infinities, no negative zero, NaN = 0x80, max 240.
    F8E4M3Fnuz,
    /// float8 e5m2: IEEE-like with infinities, max 57344.
    F8E5M2,
    /// float8 e5m2fnuz: no infinities, no negative zero, NaN = 0x80.
    F8E5M2Fnuz,
    /// float8 e8m0: an unsigned power of two 2^(code-127), NaN = 0xFF.
    F8E8M0,
    /// float4 e2m1: {0, 0.5, 1, 1.5, 2, 3, 4, 6} and their negatives.
    F4E2M1,
    I4,
    U4,
    I2,
    U2,
}

impl DType {
    /// Every dtype, in declaration order.
    pub const ALL: [DType; 23] = [
        DType::F32,
        DType::F16,
        DType::I64,
        DType::I32,
        DType::I8,
        DType::U8,
        DType::Bool,
        DType::F64,
        DType::Bf16,
        DType::I16,
        DType::U16,
        DType::U32,
        DType::U64,
        DType::F8E4M3Fn,
        DType::F8E4M3Fnuz,
        DType::F8E5M2,
        DType::F8E5M2Fnuz,
        DType::F8E8M0,
        DType::F4E2M1,
        DType::I4,
        DType::U4,
        DType::I2,
        DType::U2,
    ];

    /// Size of one element in bytes as pimkit stores it (bool and the sub-byte types
    /// take one byte each, as in ONNX's unpacked form).
    pub fn size(self) -> usize {
        match self {
            DType::F64 | DType::I64 | DType::U64 => 8,
            DType::F32 | DType::I32 | DType::U32 => 4,
            DType::F16 | DType::Bf16 | DType::I16 | DType::U16 => 2,
            _ => 1,
        }
    }

    /// Bits of one element as ONNX packs it (4-bit types pack two per byte).
    pub fn bits(self) -> usize {
        match self {
            DType::F4E2M1 | DType::I4 | DType::U4 => 4,
            DType::I2 | DType::U2 => 2,
            DType::Bool => 8,
            d => 8 * d.size(),
        }
    }

    /// Float types pimkit computes with (f16 and bf16 are widened to f32, f64 stays f64).
    pub fn is_float(self) -> bool {
        matches!(self, DType::F32 | DType::F16 | DType::Bf16 | DType::F64)
    }

    /// The 8-bit float formats and float4 (stored as codes; only Cast, QuantizeLinear
    /// and DequantizeLinear read or write them).
    pub fn is_minifloat(self) -> bool {
        matches!(
            self,
            DType::F8E4M3Fn
                | DType::F8E4M3Fnuz
                | DType::F8E5M2
                | DType::F8E5M2Fnuz
                | DType::F8E8M0
                | DType::F4E2M1
        )
    }

    /// Integer types of 8 bits or more (not bool).
    pub fn is_int(self) -> bool {
        matches!(
            self,
            DType::I64
                | DType::I32
                | DType::I16
                | DType::I8
                | DType::U64
                | DType::U32
                | DType::U16
                | DType::U8
        )
    }

    /// Signed integers (including the 4- and 2-bit ones).
    pub fn is_signed_int(self) -> bool {
        matches!(
            self,
            DType::I64 | DType::I32 | DType::I16 | DType::I8 | DType::I4 | DType::I2
        )
    }

    /// Sub-byte integer types (stored one per byte).
    pub fn is_subbyte_int(self) -> bool {
        matches!(self, DType::I4 | DType::U4 | DType::I2 | DType::U2)
    }

    /// 8-bit quantized integer types.
    pub fn is_quant8(self) -> bool {
        matches!(self, DType::I8 | DType::U8)
    }

    /// Saturation bounds of the integer types QuantizeLinear can produce (8-, 16-, 4- and
    /// 2-bit; 32-bit for the int32 of a quantized bias).
    pub fn quant_range(self) -> Option<(i32, i32)> {
        match self {
            DType::I8 => Some((-128, 127)),
            DType::U8 => Some((0, 255)),
            DType::I16 => Some((i16::MIN as i32, i16::MAX as i32)),
            DType::U16 => Some((0, u16::MAX as i32)),
            DType::I4 => Some((-8, 7)),
            DType::U4 => Some((0, 15)),
            DType::I2 => Some((-2, 1)),
            DType::U2 => Some((0, 3)),
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
            DType::F64 => "f64",
            DType::Bf16 => "bf16",
            DType::I16 => "i16",
            DType::U16 => "u16",
            DType::U32 => "u32",
            DType::U64 => "u64",
            DType::F8E4M3Fn => "f8e4m3fn",
            DType::F8E4M3Fnuz => "f8e4m3fnuz",
            DType::F8E5M2 => "f8e5m2",
            DType::F8E5M2Fnuz => "f8e5m2fnuz",
            DType::F8E8M0 => "f8e8m0",
            DType::F4E2M1 => "f4e2m1",
            DType::I4 => "i4",
            DType::U4 => "u4",
            DType::I2 => "i2",
            DType::U2 => "u2",
        }
    }

    pub fn parse(s: &str) -> Option<DType> {
        DType::ALL.into_iter().find(|d| d.name() == s)
    }
}

impl fmt::Display for DType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
