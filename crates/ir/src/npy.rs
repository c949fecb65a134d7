//! Tensors in and out as numpy `.npy` files, the ecosystem's exchange format.

use crate::{Tensor, TensorData};
use half::f16;
use npyz::WriterBuilder;
use std::io::BufReader;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum NpyError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error(
        "{path}: unsupported .npy dtype: {dtype}; save a plain array of float16/32/64, int8/16/32/64, uint8/16/32/64 or bool"
    )]
    DType { path: String, dtype: String },
    #[error(
        "{path}: Fortran-order arrays are not supported; save with np.save(path, np.ascontiguousarray(a))"
    )]
    Fortran { path: String },
    #[error("{path}: {msg}")]
    Bad { path: String, msg: String },
}

/// Read a C-order `.npy` file. Callers that bind it to a graph input convert a float64
/// array (numpy's default) to the input's float type.
pub fn read_npy(path: &Path) -> Result<Tensor, NpyError> {
    let p = path.display().to_string();
    let io = |source| NpyError::Io {
        path: p.clone(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io)?;
    if header_shape_overflows(path) {
        return Err(NpyError::Bad {
            path: p,
            msg: "the header's shape has more elements than 64 bits can count".into(),
        });
    }
    let npy = npyz::NpyFile::new(BufReader::new(file)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            NpyError::Bad {
                path: p.clone(),
                msg: "the .npy header is incomplete (a truncated file, or a header length past its end)".into(),
            }
        } else {
            // npyz quotes the whole header in its message: keep the start.
            NpyError::Bad {
                path: p.clone(),
                msg: format!(
                    "not a valid .npy file: {}; write it with numpy.save",
                    // (its parse errors span several lines; the first says what)
                    crate::clip(e.to_string().lines().next().unwrap_or(""), 120)
                ),
            }
        }
    })?;
    if npy.order() == npyz::Order::Fortran && npy.shape().len() > 1 {
        return Err(NpyError::Fortran { path: p });
    }
    let shape: Vec<usize> = npy.shape().iter().map(|&d| d as usize).collect();
    let shape_text = crate::clip(&format!("{shape:?}"), 80);
    let descr = match npy.dtype() {
        npyz::DType::Plain(ts) => ts.to_string(),
        other => {
            return Err(NpyError::DType {
                path: p,
                dtype: describe_dtype(&other),
            });
        }
    };
    // A header whose shape needs more data than the file holds (truncated or lying) is
    // reported with both sizes.
    let item: usize = descr.get(2..).and_then(|d| d.parse().ok()).unwrap_or(1);
    let file_len = std::fs::metadata(path).map(|m| m.len()).unwrap_or(u64::MAX);
    let Some(need) = crate::checked_bytes(&shape, item).filter(|&n| n <= file_len) else {
        return Err(NpyError::Bad {
            path: p,
            msg: format!(
                "the header declares shape {shape_text} of {descr}, more data than the {file_len}-byte file holds"
            ),
        });
    };
    let io = |e: std::io::Error| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            NpyError::Bad {
                path: p.clone(),
                msg: format!(
                    "truncated: the header declares shape {shape_text} of {descr} ({need} bytes of data) but the file ends early"
                ),
            }
        } else {
            io(e)
        }
    };
    // Endianness '<' or '|' (native little-endian machines); '>' is rejected by npyz reads below.
    let data = match descr.get(1..).unwrap_or("") {
        "f4" => TensorData::F32(npy.into_vec::<f32>().map_err(io)?),
        "f8" => TensorData::F64(npy.into_vec::<f64>().map_err(io)?),
        "f2" => TensorData::F16(npy.into_vec::<f16>().map_err(io)?),
        "i8" => TensorData::I64(npy.into_vec::<i64>().map_err(io)?),
        "i4" => TensorData::I32(npy.into_vec::<i32>().map_err(io)?),
        "i2" => TensorData::I16(npy.into_vec::<i16>().map_err(io)?),
        "i1" => TensorData::I8(npy.into_vec::<i8>().map_err(io)?),
        "u8" => TensorData::U64(npy.into_vec::<u64>().map_err(io)?),
        "u4" => TensorData::U32(npy.into_vec::<u32>().map_err(io)?),
        "u2" => TensorData::U16(npy.into_vec::<u16>().map_err(io)?),
        "u1" => TensorData::U8(npy.into_vec::<u8>().map_err(io)?),
        "b1" => TensorData::Bool(npy.into_vec::<bool>().map_err(io)?),
        _ => {
            return Err(NpyError::DType {
                path: p,
                dtype: format!("'{}'", crate::clip(&descr, 40)),
            });
        }
    };
    Tensor::new(shape, data).ok_or_else(|| NpyError::Bad {
        path: p,
        msg: "data length does not match the header shape".into(),
    })
}

/// A structured or sub-array dtype in words (its Debug form is a page of Rust syntax).
fn describe_dtype(d: &npyz::DType) -> String {
    let text = match d {
        npyz::DType::Plain(ts) => ts.to_string(),
        npyz::DType::Record(fields) => {
            let names: Vec<&str> = fields.iter().map(|f| f.name.as_str()).collect();
            format!("a structured dtype with fields {}", names.join(", "))
        }
        npyz::DType::Array(n, inner) => format!("a sub-array of {n} x {}", describe_dtype(inner)),
    };
    crate::clip(&text, 100)
}

/// Whether the header's `'shape': (...)` multiplies past 64 bits (npyz multiplies the
/// dimensions unchecked). Unreadable or odd headers answer false and are left to npyz.
fn header_shape_overflows(path: &Path) -> bool {
    use std::io::Read;
    let mut head = vec![0u8; 4096];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let text = String::from_utf8_lossy(&head[..n]);
    let Some(rest) = text.split("'shape':").nth(1) else {
        return false;
    };
    let Some(inner) = rest
        .split_once('(')
        .and_then(|(_, r)| r.split_once(')'))
        .map(|(i, _)| i)
    else {
        return false;
    };
    inner
        .split(',')
        .filter_map(|d| d.trim().parse::<u64>().ok())
        .try_fold(1u64, |a, d| a.checked_mul(d))
        .is_none()
}

fn write_typed<T: npyz::AutoSerialize + Copy>(
    path: &Path,
    shape: &[usize],
    data: &[T],
) -> std::io::Result<()> {
    // Written to a temporary file and renamed into place: never a partial .npy.
    let mut file = crate::fsio::AtomicFile::create(path)?;
    let shape: Vec<u64> = shape.iter().map(|&d| d as u64).collect();
    let mut w = npyz::WriteOptions::new()
        .default_dtype()
        .shape(&shape)
        .writer(&mut file)
        .begin_nd()?;
    w.extend(data.iter().copied())?;
    w.finish()?;
    file.commit()
}

/// Write a tensor as a C-order little-endian `.npy` file.
pub fn write_npy(path: &Path, t: &Tensor) -> Result<(), NpyError> {
    let r = match &t.data {
        TensorData::F32(v) => write_typed(path, &t.shape, v),
        TensorData::F16(v) => write_typed(path, &t.shape, v),
        TensorData::I64(v) => write_typed(path, &t.shape, v),
        TensorData::I32(v) => write_typed(path, &t.shape, v),
        TensorData::I8(v) => write_typed(path, &t.shape, v),
        TensorData::U8(v) => write_typed(path, &t.shape, v),
        TensorData::Bool(v) => write_typed(path, &t.shape, v),
        TensorData::F64(v) => write_typed(path, &t.shape, v),
        TensorData::I16(v) => write_typed(path, &t.shape, v),
        TensorData::U16(v) => write_typed(path, &t.shape, v),
        TensorData::U32(v) => write_typed(path, &t.shape, v),
        TensorData::U64(v) => write_typed(path, &t.shape, v),
        // numpy has no bfloat16 or minifloat types: their values are written as float32
        // (exact), the 4-/2-bit integers as int8/uint8.
        TensorData::Bf16(_) => write_typed(path, &t.shape, &t.to_f32_vec()),
        TensorData::Codes(d, _) if !d.is_subbyte_int() => {
            write_typed(path, &t.shape, &t.to_f32_vec())
        }
        TensorData::Codes(d, _) if d.is_signed_int() => write_typed(
            path,
            &t.shape,
            &t.to_i64_vec().iter().map(|&x| x as i8).collect::<Vec<_>>(),
        ),
        TensorData::Codes(_, v) => write_typed(path, &t.shape, v),
    };
    r.map_err(|source| NpyError::Io {
        path: path.display().to_string(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_every_dtype() {
        let dir = std::env::temp_dir().join(format!("pimkit-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let cases = vec![
            Tensor::from_f32(vec![2, 3], vec![1.0, -2.5, 3.0, 0.0, 1e-8, 7.0]),
            Tensor::from_f16(vec![2], vec![f16::from_f32(1.5), f16::from_f32(-2.0)]),
            Tensor::from_i64(vec![3], vec![-1, 0, i64::MAX]),
            Tensor::from_i32(vec![1, 2], vec![i32::MIN, 5]),
            Tensor::from_i8(vec![2], vec![-128, 127]),
            Tensor::from_u8(vec![], vec![200]),
            Tensor::from_bool(vec![2, 1], vec![true, false]),
        ];
        for (i, t) in cases.into_iter().enumerate() {
            let p = dir.join(format!("{i}.npy"));
            write_npy(&p, &t).unwrap();
            assert_eq!(read_npy(&p).unwrap(), t);
        }
    }

    #[test]
    fn truncated_and_lying_files_say_so() {
        let dir = std::env::temp_dir().join(format!("pimkit-npy-bad-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("t.npy");
        write_npy(&p, &Tensor::from_f32(vec![4, 4], vec![1.0; 16])).unwrap();
        let full = std::fs::read(&p).unwrap();
        // Data cut short.
        std::fs::write(&p, &full[..full.len() - 8]).unwrap();
        let e = read_npy(&p).unwrap_err().to_string();
        assert!(e.contains("truncated") && e.contains("[4, 4]"), "{e}");
        // Header cut short.
        std::fs::write(&p, &full[..20]).unwrap();
        let e = read_npy(&p).unwrap_err().to_string();
        assert!(e.contains("header is incomplete"), "{e}");
        // A header shape whose byte size overflows 64 bits.
        // (Same header length: the longer shape eats the padding spaces before its '\n'.)
        let at = full.windows(5).position(|w| w == b"(4, 4").unwrap();
        let nl = full.iter().position(|&b| b == b'\n').unwrap();
        let big = b"(4611686018427387904, 4";
        let mut lying = full[..at].to_vec();
        lying.extend_from_slice(big);
        lying.extend_from_slice(&full[at + 5..nl - (big.len() - 5)]);
        lying.extend_from_slice(&full[nl..]);
        assert_eq!(lying.len(), full.len());
        std::fs::write(&p, &lying).unwrap();
        let e = read_npy(&p).unwrap_err().to_string();
        assert!(e.contains("64 bits"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn missing_file_names_path() {
        let e = read_npy(Path::new("/nonexistent/x.npy"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("/nonexistent/x.npy"), "{e}");
    }
}
