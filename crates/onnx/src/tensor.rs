//! TensorProto <-> pimkit Tensor: element types, raw and typed data fields, external data.

use crate::error::{OnnxError, Result};
use crate::proto::{TensorProto, tensor_proto::DataLocation};
use half::{bf16, f16};
use pimkit_ir::{DType, Tensor, TensorData, TensorType};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

/// ONNX TensorProto.DataType codes used here.
pub const FLOAT: i32 = 1;
pub const UINT8: i32 = 2;
pub const INT8: i32 = 3;
pub const UINT16: i32 = 4;
pub const INT16: i32 = 5;
pub const INT32: i32 = 6;
pub const INT64: i32 = 7;
pub const BOOL: i32 = 9;
pub const FLOAT16: i32 = 10;
pub const DOUBLE: i32 = 11;
pub const UINT32: i32 = 12;
pub const UINT64: i32 = 13;
pub const BFLOAT16: i32 = 16;
pub const FLOAT8E4M3FN: i32 = 17;
pub const FLOAT8E4M3FNUZ: i32 = 18;
pub const FLOAT8E5M2: i32 = 19;
pub const FLOAT8E5M2FNUZ: i32 = 20;
pub const UINT4: i32 = 21;
pub const INT4: i32 = 22;
pub const FLOAT4E2M1: i32 = 23;
pub const FLOAT8E8M0: i32 = 24;
pub const UINT2: i32 = 25;
pub const INT2: i32 = 26;

/// (ONNX code, pimkit dtype) for every element type pimkit holds.
const CODES: [(i32, DType); 23] = [
    (FLOAT, DType::F32),
    (UINT8, DType::U8),
    (INT8, DType::I8),
    (UINT16, DType::U16),
    (INT16, DType::I16),
    (INT32, DType::I32),
    (INT64, DType::I64),
    (BOOL, DType::Bool),
    (FLOAT16, DType::F16),
    (DOUBLE, DType::F64),
    (UINT32, DType::U32),
    (UINT64, DType::U64),
    (BFLOAT16, DType::Bf16),
    (FLOAT8E4M3FN, DType::F8E4M3Fn),
    (FLOAT8E4M3FNUZ, DType::F8E4M3Fnuz),
    (FLOAT8E5M2, DType::F8E5M2),
    (FLOAT8E5M2FNUZ, DType::F8E5M2Fnuz),
    (UINT4, DType::U4),
    (INT4, DType::I4),
    (FLOAT4E2M1, DType::F4E2M1),
    (FLOAT8E8M0, DType::F8E8M0),
    (UINT2, DType::U2),
    (INT2, DType::I2),
];

/// Largest element count accepted for any tensor type read from a file (guards
/// against overflow and absurd allocations from corrupt models).
pub const MAX_ELEMS: usize = 1 << 40;

/// Map an ONNX element type to a pimkit dtype; strings and complex numbers are rejected
/// with a message naming `what`.
pub fn dtype_from_onnx(code: i32, what: &str) -> Result<DType> {
    if let Some(&(_, d)) = CODES.iter().find(|(c, _)| *c == code) {
        return Ok(d);
    }
    let name = crate::proto::tensor_proto::DataType::try_from(code)
        .map(|d| d.as_str_name().to_string())
        .unwrap_or_else(|_| format!("code {code}"));
    Err(OnnxError::Model(format!(
        "{what}: element type {name} is not supported (pimkit handles every numeric and bool \
         type; not strings or complex numbers)"
    )))
}

pub fn onnx_code(dt: DType) -> i32 {
    CODES
        .iter()
        .find(|(_, d)| *d == dt)
        .map(|&(c, _)| c)
        .unwrap_or(FLOAT)
}

/// Convert ONNX dims to a checked static shape.
pub fn checked_shape(dims: &[i64], what: &str) -> Result<Vec<usize>> {
    let mut n: usize = 1;
    let mut out = Vec::with_capacity(dims.len());
    for &d in dims {
        if d < 0 {
            return Err(OnnxError::Model(format!("{what}: negative dimension {d}")));
        }
        let d = d as usize;
        n = n
            .checked_mul(d)
            .filter(|&n| n <= MAX_ELEMS)
            .ok_or_else(|| OnnxError::Model(format!("{what}: shape {dims:?} is too large")))?;
        out.push(d);
    }
    Ok(out)
}

/// Static type of an initializer or Constant tensor.
pub fn proto_type(tp: &TensorProto) -> Result<TensorType> {
    let what = format!("tensor '{}'", tp.name());
    let dt = dtype_from_onnx(tp.data_type(), &what)?;
    Ok(TensorType::new(dt, checked_shape(&tp.dims, &what)?))
}

pub fn is_external(tp: &TensorProto) -> bool {
    tp.data_location() == DataLocation::External
}

fn terr(tp: &TensorProto, msg: impl Into<String>) -> OnnxError {
    OnnxError::Tensor {
        tensor: tp.name().to_string(),
        msg: msg.into(),
    }
}

/// Read the bytes of an externally stored tensor (location/offset/length relative to the
/// model's directory). Paths that leave the model directory are refused.
pub fn read_external(tp: &TensorProto, base_dir: Option<&Path>) -> Result<Vec<u8>> {
    let mut location = None;
    let mut offset = 0u64;
    let mut length = None;
    for kv in &tp.external_data {
        let parse = |v: &str| {
            v.parse::<u64>().map_err(|_| {
                terr(
                    tp,
                    format!("external_data {} = '{v}' is not a number", kv.key()),
                )
            })
        };
        match kv.key() {
            "location" => location = Some(kv.value().to_string()),
            "offset" => offset = parse(kv.value())?,
            "length" => length = Some(parse(kv.value())?),
            _ => {}
        }
    }
    let loc = location.ok_or_else(|| terr(tp, "external data without a 'location' entry"))?;
    let rel = PathBuf::from(&loc);
    if rel.is_absolute() || rel.components().any(|c| matches!(c, Component::ParentDir)) {
        return Err(terr(
            tp,
            format!(
                "external data location '{loc}' must be a relative path inside the model directory"
            ),
        ));
    }
    let base = base_dir.ok_or_else(|| {
        terr(
            tp,
            format!("stored in external file '{loc}' but the model was loaded from bytes without a directory; use load() with the model path"),
        )
    })?;
    let path = base.join(&rel);
    let ext = |msg: String| OnnxError::ExternalData {
        tensor: tp.name().to_string(),
        path: path.clone(),
        msg,
    };
    let mut f = std::fs::File::open(&path)
        .map_err(|e| ext(format!("{e} (it must sit next to the .onnx file)")))?;
    let size = f.metadata().map_err(|e| ext(e.to_string()))?.len();
    let len = match length {
        Some(l) => l,
        None => size.saturating_sub(offset),
    };
    if offset.checked_add(len).is_none_or(|end| end > size) {
        return Err(ext(format!(
            "offset {offset} + length {len} is past the end of the file ({size} bytes)"
        )));
    }
    f.seek(SeekFrom::Start(offset))
        .map_err(|e| ext(e.to_string()))?;
    let mut buf = vec![0u8; len as usize];
    f.read_exact(&mut buf).map_err(|e| ext(e.to_string()))?;
    Ok(buf)
}

fn from_le<const N: usize, T>(raw: &[u8], f: impl Fn([u8; N]) -> T) -> Vec<T> {
    raw.chunks_exact(N)
        .map(|c| {
            let mut b = [0u8; N];
            b.copy_from_slice(c);
            f(b)
        })
        .collect()
}

/// Unpack sub-byte elements (`bits` = 4 or 2, first element in the low bits) into one
/// code per byte.
fn unpack_bits(bytes: impl Iterator<Item = u8>, bits: usize, n: usize) -> Vec<u8> {
    let per = 8 / bits;
    let mask = ((1u16 << bits) - 1) as u8;
    bytes
        .flat_map(|b| (0..per).map(move |k| (b >> (k * bits)) & mask))
        .take(n)
        .collect()
}

fn pack_bits(codes: &[u8], bits: usize) -> Vec<u8> {
    let per = 8 / bits;
    let mask = ((1u16 << bits) - 1) as u8;
    codes
        .chunks(per)
        .map(|c| {
            c.iter()
                .enumerate()
                .fold(0u8, |b, (k, &v)| b | ((v & mask) << (k * bits)))
        })
        .collect()
}

/// Decode the data of a TensorProto (raw_data, the typed fields, or external data).
pub fn decode(tp: &TensorProto, base_dir: Option<&Path>) -> Result<Tensor> {
    let ty = proto_type(tp)?;
    let n = ty.numel();
    let dt = ty.dtype;
    let ext;
    let raw: Option<&[u8]> = if is_external(tp) {
        ext = read_external(tp, base_dir)?;
        Some(&ext)
    } else {
        tp.raw_data.as_deref()
    };
    let data = if let Some(raw) = raw {
        let need = (n * dt.bits()).div_ceil(8);
        if raw.len() != need {
            return Err(terr(
                tp,
                format!(
                    "raw data holds {} bytes, shape {:?} of {} needs {need}",
                    raw.len(),
                    ty.shape,
                    dt,
                ),
            ));
        }
        match dt {
            DType::F32 => TensorData::F32(from_le(raw, f32::from_le_bytes)),
            DType::F64 => TensorData::F64(from_le(raw, f64::from_le_bytes)),
            DType::F16 => TensorData::F16(from_le(raw, |b| f16::from_bits(u16::from_le_bytes(b)))),
            DType::Bf16 => {
                TensorData::Bf16(from_le(raw, |b| bf16::from_bits(u16::from_le_bytes(b))))
            }
            DType::I64 => TensorData::I64(from_le(raw, i64::from_le_bytes)),
            DType::I32 => TensorData::I32(from_le(raw, i32::from_le_bytes)),
            DType::I16 => TensorData::I16(from_le(raw, i16::from_le_bytes)),
            DType::U64 => TensorData::U64(from_le(raw, u64::from_le_bytes)),
            DType::U32 => TensorData::U32(from_le(raw, u32::from_le_bytes)),
            DType::U16 => TensorData::U16(from_le(raw, u16::from_le_bytes)),
            DType::I8 => TensorData::I8(raw.iter().map(|&b| b as i8).collect()),
            DType::U8 => TensorData::U8(raw.to_vec()),
            DType::Bool => TensorData::Bool(raw.iter().map(|&b| b != 0).collect()),
            d if d.bits() < 8 => {
                TensorData::Codes(d, unpack_bits(raw.iter().copied(), d.bits(), n))
            }
            d => TensorData::Codes(d, raw.to_vec()),
        }
    } else {
        // Typed fields: ONNX stores integer types up to 32 bits, f16/bf16 and the float8
        // codes in int32_data (4-/2-bit types packed two/four per entry), u32/u64 in
        // uint64_data.
        let i32s = &tp.int32_data;
        check_int32_range(tp, dt)?;
        let data = match dt {
            DType::F32 => TensorData::F32(tp.float_data.clone()),
            DType::F64 => TensorData::F64(tp.double_data.clone()),
            DType::I64 => TensorData::I64(tp.int64_data.clone()),
            DType::U64 => TensorData::U64(tp.uint64_data.clone()),
            DType::U32 => TensorData::U32(tp.uint64_data.iter().map(|&x| x as u32).collect()),
            DType::I32 => TensorData::I32(i32s.clone()),
            DType::I16 => TensorData::I16(i32s.iter().map(|&x| x as i16).collect()),
            DType::U16 => TensorData::U16(i32s.iter().map(|&x| x as u16).collect()),
            DType::I8 => TensorData::I8(i32s.iter().map(|&x| x as i8).collect()),
            DType::U8 => TensorData::U8(i32s.iter().map(|&x| x as u8).collect()),
            DType::Bool => TensorData::Bool(i32s.iter().map(|&x| x != 0).collect()),
            DType::F16 => TensorData::F16(i32s.iter().map(|&x| f16::from_bits(x as u16)).collect()),
            DType::Bf16 => {
                TensorData::Bf16(i32s.iter().map(|&x| bf16::from_bits(x as u16)).collect())
            }
            d if d.bits() < 8 => {
                TensorData::Codes(d, unpack_bits(i32s.iter().map(|&x| x as u8), d.bits(), n))
            }
            d => TensorData::Codes(d, i32s.iter().map(|&x| x as u8).collect()),
        };
        if data.len() != n {
            return Err(terr(
                tp,
                format!(
                    "holds {} elements but its shape {:?} needs {n}",
                    data.len(),
                    ty.shape
                ),
            ));
        }
        data
    };
    Tensor::new(ty.shape, data).ok_or_else(|| terr(tp, "data does not match the shape"))
}

/// Types narrower than 32 bits travel in `int32_data`; a value outside the type (a uint8
/// zero point of 300) is a corrupt tensor. onnxruntime truncates it silently, which would
/// make a quantized model compute with a different zero point than the file shows.
fn check_int32_range(tp: &TensorProto, dt: DType) -> Result<()> {
    let (lo, hi): (i64, i64) = match dt {
        DType::I8 => (-128, 127),
        DType::U8 => (0, 255),
        DType::I16 => (-32768, 32767),
        DType::U16 | DType::F16 | DType::Bf16 => (0, 65535),
        DType::Bool => (0, 1),
        DType::F32 | DType::F64 | DType::I32 | DType::I64 | DType::U32 | DType::U64 => {
            return Ok(());
        }
        // float8/float4 codes and packed 2-/4-bit elements: one byte per entry.
        _ => (0, 255),
    };
    match tp
        .int32_data
        .iter()
        .position(|&x| !(lo..=hi).contains(&(x as i64)))
    {
        None => Ok(()),
        Some(i) => Err(terr(
            tp,
            format!(
                "element {i} is {}, outside the range of {dt} ({lo} to {hi}); store values of the tensor's type (numpy: np.array(..., dtype=...)) or change its data_type",
                tp.int32_data[i]
            ),
        )),
    }
}

/// Encode a tensor as a TensorProto with little-endian raw_data.
pub fn encode(name: &str, t: &Tensor) -> TensorProto {
    let raw: Vec<u8> = match &t.data {
        TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::F16(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        TensorData::Bf16(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        TensorData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::I16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::U16(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::I8(v) => v.iter().map(|&x| x as u8).collect(),
        TensorData::U8(v) => v.clone(),
        TensorData::Bool(v) => v.iter().map(|&x| x as u8).collect(),
        TensorData::Codes(d, v) if d.bits() < 8 => pack_bits(v, d.bits()),
        TensorData::Codes(_, v) => v.clone(),
    };
    TensorProto {
        name: Some(name.to_string()),
        dims: t.shape.iter().map(|&d| d as i64).collect(),
        data_type: Some(onnx_code(t.dtype())),
        raw_data: Some(raw),
        ..Default::default()
    }
}
