use crate::DType;
use half::{bf16, f16};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Number of elements of a shape (1 for a scalar).
pub fn numel(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// The largest tensor pimkit accepts, in bytes (256 TiB): far above any real model, low
/// enough that element counts, byte sizes and MAC counts of such tensors fit in 64 bits.
pub const MAX_TENSOR_BYTES: u64 = 1 << 48;

/// Bytes of `numel(shape)` elements of `elem` bytes, or `None` above [`MAX_TENSOR_BYTES`]
/// (including products that would overflow).
pub fn checked_bytes(shape: &[usize], elem: usize) -> Option<u64> {
    let mut b = elem as u128;
    for &d in shape {
        b = b.checked_mul(d as u128)?;
        if b > MAX_TENSOR_BYTES as u128 {
            return None;
        }
    }
    Some(b as u64)
}

/// The error text for a tensor over [`MAX_TENSOR_BYTES`].
pub fn too_large(shape: &[usize], dtype: DType) -> String {
    let b: f64 = shape.iter().map(|&d| d as f64).product::<f64>() * dtype.size() as f64;
    format!(
        "shape {shape:?} ({dtype}) needs {b:.3e} bytes, over pimkit's limit of 2^48 bytes (256 TiB) per tensor; check the dimensions"
    )
}

/// Static type of a value: element type and shape.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TensorType {
    pub dtype: DType,
    pub shape: Vec<usize>,
}

impl TensorType {
    pub fn new(dtype: DType, shape: impl Into<Vec<usize>>) -> Self {
        TensorType {
            dtype,
            shape: shape.into(),
        }
    }
    pub fn numel(&self) -> usize {
        numel(&self.shape)
    }
    pub fn bytes(&self) -> usize {
        self.numel() * self.dtype.size()
    }
    /// Byte size, or `None` when over [`MAX_TENSOR_BYTES`].
    pub fn checked_bytes(&self) -> Option<u64> {
        checked_bytes(&self.shape, self.dtype.size())
    }
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
}

impl fmt::Display for TensorType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}[", self.dtype)?;
        for (i, d) in self.shape.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{d}")?;
        }
        f.write_str("]")
    }
}

/// Dense row-major element storage, one variant per storage type. The 8- and 4-bit
/// float formats and the 4-/2-bit integers share [`TensorData::Codes`]: one code per byte
/// (see [`crate::minifloat`]).
#[derive(Clone, Debug, PartialEq)]
pub enum TensorData {
    F32(Vec<f32>),
    F16(Vec<f16>),
    I64(Vec<i64>),
    I32(Vec<i32>),
    I8(Vec<i8>),
    U8(Vec<u8>),
    Bool(Vec<bool>),
    F64(Vec<f64>),
    Bf16(Vec<bf16>),
    I16(Vec<i16>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    /// Codes of a minifloat or sub-byte integer dtype, one per byte (low bits).
    Codes(DType, Vec<u8>),
}

/// Apply a generic expression to the vector inside any [`TensorData`], producing a new
/// `TensorData` of the same variant. `$v` is bound to `&Vec<T>` (or the vector itself
/// when `$data` is owned).
#[macro_export]
macro_rules! map_data {
    ($data:expr, |$v:ident| $body:expr) => {
        match $data {
            $crate::TensorData::F32($v) => $crate::TensorData::F32($body),
            $crate::TensorData::F16($v) => $crate::TensorData::F16($body),
            $crate::TensorData::I64($v) => $crate::TensorData::I64($body),
            $crate::TensorData::I32($v) => $crate::TensorData::I32($body),
            $crate::TensorData::I8($v) => $crate::TensorData::I8($body),
            $crate::TensorData::U8($v) => $crate::TensorData::U8($body),
            $crate::TensorData::Bool($v) => $crate::TensorData::Bool($body),
            $crate::TensorData::F64($v) => $crate::TensorData::F64($body),
            $crate::TensorData::Bf16($v) => $crate::TensorData::Bf16($body),
            $crate::TensorData::I16($v) => $crate::TensorData::I16($body),
            $crate::TensorData::U16($v) => $crate::TensorData::U16($body),
            $crate::TensorData::U32($v) => $crate::TensorData::U32($body),
            $crate::TensorData::U64($v) => $crate::TensorData::U64($body),
            $crate::TensorData::Codes(d, $v) => $crate::TensorData::Codes(*d, $body),
        }
    };
}

/// Evaluate a generic expression on the vector inside any [`TensorData`] (`$v` bound to
/// `&Vec<T>`), returning its value.
#[macro_export]
macro_rules! with_data {
    ($data:expr, |$v:ident| $body:expr) => {
        match $data {
            $crate::TensorData::F32($v) => $body,
            $crate::TensorData::F16($v) => $body,
            $crate::TensorData::I64($v) => $body,
            $crate::TensorData::I32($v) => $body,
            $crate::TensorData::I8($v) => $body,
            $crate::TensorData::U8($v) => $body,
            $crate::TensorData::Bool($v) => $body,
            $crate::TensorData::F64($v) => $body,
            $crate::TensorData::Bf16($v) => $body,
            $crate::TensorData::I16($v) => $body,
            $crate::TensorData::U16($v) => $body,
            $crate::TensorData::U32($v) => $body,
            $crate::TensorData::U64($v) => $body,
            $crate::TensorData::Codes(_, $v) => $body,
        }
    };
}

impl TensorData {
    pub fn dtype(&self) -> DType {
        match self {
            TensorData::F32(_) => DType::F32,
            TensorData::F16(_) => DType::F16,
            TensorData::I64(_) => DType::I64,
            TensorData::I32(_) => DType::I32,
            TensorData::I8(_) => DType::I8,
            TensorData::U8(_) => DType::U8,
            TensorData::Bool(_) => DType::Bool,
            TensorData::F64(_) => DType::F64,
            TensorData::Bf16(_) => DType::Bf16,
            TensorData::I16(_) => DType::I16,
            TensorData::U16(_) => DType::U16,
            TensorData::U32(_) => DType::U32,
            TensorData::U64(_) => DType::U64,
            TensorData::Codes(d, _) => *d,
        }
    }
    pub fn len(&self) -> usize {
        with_data!(self, |v| v.len())
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// All-zero storage of `n` elements (code 0 is +0 in every minifloat format).
    pub fn zeros(dtype: DType, n: usize) -> TensorData {
        match dtype {
            DType::F32 => TensorData::F32(vec![0.0; n]),
            DType::F16 => TensorData::F16(vec![f16::ZERO; n]),
            DType::I64 => TensorData::I64(vec![0; n]),
            DType::I32 => TensorData::I32(vec![0; n]),
            DType::I8 => TensorData::I8(vec![0; n]),
            DType::U8 => TensorData::U8(vec![0; n]),
            DType::Bool => TensorData::Bool(vec![false; n]),
            DType::F64 => TensorData::F64(vec![0.0; n]),
            DType::Bf16 => TensorData::Bf16(vec![bf16::ZERO; n]),
            DType::I16 => TensorData::I16(vec![0; n]),
            DType::U16 => TensorData::U16(vec![0; n]),
            DType::U32 => TensorData::U32(vec![0; n]),
            DType::U64 => TensorData::U64(vec![0; n]),
            d => TensorData::Codes(d, vec![0; n]),
        }
    }
}

/// A tensor with data: the type of constants, interpreter values and .npy files.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub shape: Vec<usize>,
    pub data: TensorData,
}

macro_rules! typed_ctor {
    ($ctor:ident, $get:ident, $variant:ident, $t:ty) => {
        pub fn $ctor(shape: impl Into<Vec<usize>>, data: Vec<$t>) -> Tensor {
            let shape = shape.into();
            assert_eq!(
                numel(&shape),
                data.len(),
                "tensor data length does not match shape {shape:?}"
            );
            Tensor {
                shape,
                data: TensorData::$variant(data),
            }
        }
        pub fn $get(&self) -> Option<&[$t]> {
            match &self.data {
                TensorData::$variant(v) => Some(v),
                _ => None,
            }
        }
    };
}

impl Tensor {
    /// Checked constructor: `None` when the data length does not match the shape.
    pub fn new(shape: Vec<usize>, data: TensorData) -> Option<Tensor> {
        (numel(&shape) == data.len()).then_some(Tensor { shape, data })
    }
    typed_ctor!(from_f32, as_f32, F32, f32);
    typed_ctor!(from_f16, as_f16, F16, f16);
    typed_ctor!(from_i64, as_i64, I64, i64);
    typed_ctor!(from_i32, as_i32, I32, i32);
    typed_ctor!(from_i8, as_i8, I8, i8);
    typed_ctor!(from_u8, as_u8, U8, u8);
    typed_ctor!(from_bool, as_bool, Bool, bool);
    typed_ctor!(from_f64, as_f64, F64, f64);
    typed_ctor!(from_bf16, as_bf16, Bf16, bf16);
    typed_ctor!(from_i16, as_i16, I16, i16);
    typed_ctor!(from_u16, as_u16, U16, u16);
    typed_ctor!(from_u32, as_u32, U32, u32);
    typed_ctor!(from_u64, as_u64, U64, u64);

    pub fn zeros(dtype: DType, shape: impl Into<Vec<usize>>) -> Tensor {
        let shape = shape.into();
        let data = TensorData::zeros(dtype, numel(&shape));
        Tensor { shape, data }
    }
    pub fn scalar_f32(v: f32) -> Tensor {
        Tensor::from_f32(vec![], vec![v])
    }
    pub fn dtype(&self) -> DType {
        self.data.dtype()
    }
    pub fn ty(&self) -> TensorType {
        TensorType::new(self.dtype(), self.shape.clone())
    }
    pub fn numel(&self) -> usize {
        self.data.len()
    }
    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    /// Every element converted to f64 (bool as 0/1, codes decoded). Used for constant
    /// folding and quantization parameters, never on hot paths.
    pub fn to_f64_vec(&self) -> Vec<f64> {
        match &self.data {
            TensorData::F32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::F16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            TensorData::Bf16(v) => v.iter().map(|&x| x.to_f64()).collect(),
            TensorData::F64(v) => v.clone(),
            TensorData::I64(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::I32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::I16(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::I8(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U64(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U32(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U16(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::U8(v) => v.iter().map(|&x| x as f64).collect(),
            TensorData::Bool(v) => v.iter().map(|&x| x as u8 as f64).collect(),
            TensorData::Codes(d, v) => v.iter().map(|&c| code_to_f64(*d, c)).collect(),
        }
    }

    /// Every element as i64 (floats truncated, u64 reinterpreted). For shape-like tensors
    /// and the integer arithmetic domain.
    pub fn to_i64_vec(&self) -> Vec<i64> {
        match &self.data {
            TensorData::I64(v) => v.clone(),
            TensorData::I32(v) => v.iter().map(|&x| x as i64).collect(),
            TensorData::I16(v) => v.iter().map(|&x| x as i64).collect(),
            TensorData::I8(v) => v.iter().map(|&x| x as i64).collect(),
            TensorData::U64(v) => v.iter().map(|&x| x as i64).collect(),
            TensorData::U32(v) => v.iter().map(|&x| x as i64).collect(),
            TensorData::U16(v) => v.iter().map(|&x| x as i64).collect(),
            TensorData::U8(v) => v.iter().map(|&x| x as i64).collect(),
            TensorData::Bool(v) => v.iter().map(|&x| x as i64).collect(),
            _ => self.to_f64_vec().into_iter().map(|x| x as i64).collect(),
        }
    }

    /// Every element as f32 (for float math in the interpreter).
    pub fn to_f32_vec(&self) -> Vec<f32> {
        match &self.data {
            TensorData::F32(v) => v.clone(),
            TensorData::F16(v) => v.iter().map(|&x| x.to_f32()).collect(),
            TensorData::Bf16(v) => v.iter().map(|&x| x.to_f32()).collect(),
            TensorData::Codes(d, v) if d.is_minifloat() => {
                v.iter().map(|&c| crate::minifloat::to_f32(*d, c)).collect()
            }
            _ => self.to_f64_vec().into_iter().map(|x| x as f32).collect(),
        }
    }

    /// Every element as i32 (8-bit and 32-bit integer tensors).
    pub fn to_i32_vec(&self) -> Vec<i32> {
        match &self.data {
            TensorData::I32(v) => v.clone(),
            TensorData::I8(v) => v.iter().map(|&x| x as i32).collect(),
            TensorData::U8(v) => v.iter().map(|&x| x as i32).collect(),
            _ => self.to_i64_vec().into_iter().map(|x| x as i32).collect(),
        }
    }

    /// numpy's default float64 array given for a narrower float input is converted to
    /// that input's dtype (every front end accepts it: CLI files, sample folders, Python
    /// arrays); any other tensor comes back unchanged, so a wrong dtype is still reported.
    /// True when converted.
    pub fn float64_as(self, want: DType) -> (Tensor, bool) {
        if self.dtype() == DType::F64 && want.is_float() && want != DType::F64 {
            let t = Tensor::from_f64_as(want, self.shape.clone(), &self.to_f64_vec());
            (t, true)
        } else {
            (self, false)
        }
    }

    /// Build a tensor of `dtype` from f64 values (rounding toward zero for integers,
    /// saturating; minifloats round to nearest even and saturate). Used by constant
    /// folding and casts.
    pub fn from_f64_as(dtype: DType, shape: Vec<usize>, v: &[f64]) -> Tensor {
        let data = match dtype {
            DType::F32 => TensorData::F32(v.iter().map(|&x| x as f32).collect()),
            DType::F16 => TensorData::F16(v.iter().map(|&x| f16::from_f64(x)).collect()),
            DType::Bf16 => TensorData::Bf16(v.iter().map(|&x| bf16::from_f64(x)).collect()),
            DType::F64 => TensorData::F64(v.to_vec()),
            DType::I64 => TensorData::I64(v.iter().map(|&x| x as i64).collect()),
            DType::I32 => TensorData::I32(v.iter().map(|&x| x as i32).collect()),
            DType::I16 => TensorData::I16(v.iter().map(|&x| x as i16).collect()),
            DType::I8 => TensorData::I8(v.iter().map(|&x| x as i8).collect()),
            DType::U64 => TensorData::U64(v.iter().map(|&x| x as u64).collect()),
            DType::U32 => TensorData::U32(v.iter().map(|&x| x as u32).collect()),
            DType::U16 => TensorData::U16(v.iter().map(|&x| x as u16).collect()),
            DType::U8 => TensorData::U8(v.iter().map(|&x| x as u8).collect()),
            DType::Bool => TensorData::Bool(v.iter().map(|&x| x != 0.0).collect()),
            d => TensorData::Codes(d, v.iter().map(|&x| f64_to_code(d, x)).collect()),
        };
        Tensor { shape, data }
    }

    /// Same data, new shape (same element count required).
    pub fn reshaped(mut self, shape: Vec<usize>) -> Option<Tensor> {
        if numel(&shape) != self.numel() {
            return None;
        }
        self.shape = shape;
        Some(self)
    }
}

/// Value of one code of a minifloat or sub-byte integer dtype.
pub fn code_to_f64(d: DType, c: u8) -> f64 {
    match d {
        DType::I4 => crate::minifloat::sext(c, 4) as f64,
        DType::I2 => crate::minifloat::sext(c, 2) as f64,
        DType::U4 => (c & 0xF) as f64,
        DType::U2 => (c & 0x3) as f64,
        d => crate::minifloat::to_f32(d, c) as f64,
    }
}

/// Code of `x` in a minifloat (nearest even, saturating) or sub-byte integer dtype
/// (truncated toward zero, saturating).
pub fn f64_to_code(d: DType, x: f64) -> u8 {
    match d.quant_range() {
        Some((lo, hi)) if d.is_subbyte_int() => {
            let bits = d.bits() as u32;
            let v = (x.trunc() as i64).clamp(lo as i64, hi as i64);
            (v as u8) & ((1u16 << bits) - 1) as u8
        }
        _ => crate::minifloat::from_f32(d, x as f32, true, "up"),
    }
}

#[cfg(test)]
mod float64_tests {
    use super::*;

    #[test]
    fn float64_is_converted_only_for_narrower_float_inputs() {
        let t = Tensor::from_f64(vec![2], vec![0.5, -1.25]);
        let (f, converted) = t.clone().float64_as(DType::F32);
        assert!(converted);
        assert_eq!(f.dtype(), DType::F32);
        assert_eq!(f.to_f64_vec(), vec![0.5, -1.25]);
        // An integer input keeps the float64 array, so the caller reports the mismatch
        // instead of truncating 0.5 to 0.
        let (i, converted) = t.clone().float64_as(DType::I64);
        assert!(!converted);
        assert_eq!(i.dtype(), DType::F64);
        assert!(!t.float64_as(DType::F64).1);
    }
}
