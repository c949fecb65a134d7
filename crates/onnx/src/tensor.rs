//! TensorProto <-> pimkit Tensor: element types, raw and typed data fields, external data.

use crate::error::{OnnxError, Result};
use crate::proto::{TensorProto, tensor_proto::DataLocation};
use half::f16;
use pimkit_ir::{DType, Tensor, TensorData, TensorType};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path, PathBuf};

/// ONNX TensorProto.DataType codes used here.
pub const FLOAT: i32 = 1;
pub const UINT8: i32 = 2;
pub const INT8: i32 = 3;
pub const INT32: i32 = 6;
pub const INT64: i32 = 7;
pub const BOOL: i32 = 9;
pub const FLOAT16: i32 = 10;
pub const DOUBLE: i32 = 11;

/// Largest element count accepted for any tensor type read from a file (guards
/// against overflow and absurd allocations from corrupt models).
pub const MAX_ELEMS: usize = 1 << 40;

/// Map an ONNX element type to a pimkit dtype. `double` maps to f32 (the caller notes
/// the conversion); other types are rejected with a message naming `what`.
pub fn dtype_from_onnx(code: i32, what: &str) -> Result<DType> {
    Ok(match code {
        FLOAT | DOUBLE => DType::F32,
        UINT8 => DType::U8,
        INT8 => DType::I8,
        INT32 => DType::I32,
        INT64 => DType::I64,
        BOOL => DType::Bool,
        FLOAT16 => DType::F16,
        _ => {
            let name = crate::proto::tensor_proto::DataType::try_from(code)
                .map(|d| d.as_str_name().to_string())
                .unwrap_or_else(|_| format!("code {code}"));
            return Err(OnnxError::Model(format!(
                "{what}: element type {name} is not supported \
                 (pimkit handles float, float16, double (as float), int64, int32, int8, uint8, bool)"
            )));
        }
    })
}

pub fn onnx_code(dt: DType) -> i32 {
    match dt {
        DType::F32 => FLOAT,
        DType::F16 => FLOAT16,
        DType::I64 => INT64,
        DType::I32 => INT32,
        DType::I8 => INT8,
        DType::U8 => UINT8,
        DType::Bool => BOOL,
    }
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

/// Decode the data of a TensorProto (raw_data, the typed fields, or external data).
pub fn decode(tp: &TensorProto, base_dir: Option<&Path>) -> Result<Tensor> {
    let ty = proto_type(tp)?;
    let n = ty.numel();
    let code = tp.data_type();
    let ext;
    let raw: Option<&[u8]> = if is_external(tp) {
        ext = read_external(tp, base_dir)?;
        Some(&ext)
    } else {
        tp.raw_data.as_deref()
    };
    let data = if let Some(raw) = raw {
        let esize = if code == DOUBLE { 8 } else { ty.dtype.size() };
        if raw.len() != n * esize {
            return Err(terr(
                tp,
                format!(
                    "raw data holds {} bytes, shape {:?} of {} needs {}",
                    raw.len(),
                    ty.shape,
                    ty.dtype,
                    n * esize
                ),
            ));
        }
        match code {
            DOUBLE => TensorData::F32(from_le(raw, |b| f64::from_le_bytes(b) as f32)),
            FLOAT => TensorData::F32(from_le(raw, f32::from_le_bytes)),
            FLOAT16 => TensorData::F16(from_le(raw, |b| f16::from_bits(u16::from_le_bytes(b)))),
            INT64 => TensorData::I64(from_le(raw, i64::from_le_bytes)),
            INT32 => TensorData::I32(from_le(raw, i32::from_le_bytes)),
            INT8 => TensorData::I8(raw.iter().map(|&b| b as i8).collect()),
            UINT8 => TensorData::U8(raw.to_vec()),
            _ => TensorData::Bool(raw.iter().map(|&b| b != 0).collect()),
        }
    } else {
        // Typed fields: ONNX stores small integer types and f16 bits in int32_data.
        let data = match code {
            FLOAT => TensorData::F32(tp.float_data.clone()),
            DOUBLE => TensorData::F32(tp.double_data.iter().map(|&x| x as f32).collect()),
            INT64 => TensorData::I64(tp.int64_data.clone()),
            INT32 => TensorData::I32(tp.int32_data.clone()),
            INT8 => TensorData::I8(tp.int32_data.iter().map(|&x| x as i8).collect()),
            UINT8 => TensorData::U8(tp.int32_data.iter().map(|&x| x as u8).collect()),
            BOOL => TensorData::Bool(tp.int32_data.iter().map(|&x| x != 0).collect()),
            _ => TensorData::F16(
                tp.int32_data
                    .iter()
                    .map(|&x| f16::from_bits(x as u16))
                    .collect(),
            ),
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

/// Encode a tensor as a TensorProto with little-endian raw_data.
pub fn encode(name: &str, t: &Tensor) -> TensorProto {
    let raw: Vec<u8> = match &t.data {
        TensorData::F32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::F16(v) => v.iter().flat_map(|x| x.to_bits().to_le_bytes()).collect(),
        TensorData::I64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::I32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        TensorData::I8(v) => v.iter().map(|&x| x as u8).collect(),
        TensorData::U8(v) => v.clone(),
        TensorData::Bool(v) => v.iter().map(|&x| x as u8).collect(),
    };
    TensorProto {
        name: Some(name.to_string()),
        dims: t.shape.iter().map(|&d| d as i64).collect(),
        data_type: Some(onnx_code(t.dtype())),
        raw_data: Some(raw),
        ..Default::default()
    }
}
