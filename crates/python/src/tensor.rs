//! numpy arrays in and out. Out: the tensor's buffer is moved into the array (no copy) for
//! every dtype numpy has; bfloat16 and the float8/float4 formats, which numpy lacks, come
//! out as float32 (exact) and the 4-/2-bit integers as int8/uint8, as `.npy` files do.
//! In: the data is copied once into pimkit's tensor (which owns its buffer), in C order
//! whatever the array's strides.

use half::f16;
use numpy::ndarray::{ArrayD, IxDyn};
use numpy::{Element, IntoPyArray, PyArrayDyn, PyArrayMethods, PyUntypedArrayMethods};
use pimkit_ir::{Tensor, TensorData};
use pyo3::prelude::*;

fn to_array<'py, T: Element>(py: Python<'py>, shape: &[usize], v: Vec<T>) -> Bound<'py, PyAny> {
    ArrayD::from_shape_vec(IxDyn(shape), v)
        .expect("tensor data matches its shape")
        .into_pyarray(py)
        .into_any()
}

/// A tensor as a numpy array.
pub fn to_numpy<'py>(py: Python<'py>, t: Tensor) -> Bound<'py, PyAny> {
    let shape = t.shape.clone();
    match t.data {
        TensorData::F32(v) => to_array(py, &shape, v),
        TensorData::F16(v) => to_array(py, &shape, v),
        TensorData::F64(v) => to_array(py, &shape, v),
        TensorData::I64(v) => to_array(py, &shape, v),
        TensorData::I32(v) => to_array(py, &shape, v),
        TensorData::I16(v) => to_array(py, &shape, v),
        TensorData::I8(v) => to_array(py, &shape, v),
        TensorData::U64(v) => to_array(py, &shape, v),
        TensorData::U32(v) => to_array(py, &shape, v),
        TensorData::U16(v) => to_array(py, &shape, v),
        TensorData::U8(v) => to_array(py, &shape, v),
        TensorData::Bool(v) => to_array(py, &shape, v),
        TensorData::Codes(d, _) if d.is_subbyte_int() && d.is_signed_int() => {
            let v = t.to_i64_vec();
            to_array(py, &shape, v.into_iter().map(|x| x as i8).collect())
        }
        TensorData::Codes(d, v) if d.is_subbyte_int() => to_array(py, &shape, v),
        data => {
            let t = Tensor { shape, data };
            to_array(py, &t.shape, t.to_f32_vec())
        }
    }
}

fn read<T: Element + Clone>(a: &Bound<'_, PyArrayDyn<T>>) -> (Vec<usize>, Vec<T>) {
    let r = a.readonly();
    let shape = r.shape().to_vec();
    let v = match r.as_slice() {
        Ok(s) => s.to_vec(),
        // Non-contiguous: logical (C) order through the strides.
        Err(_) => r.as_array().iter().cloned().collect(),
    };
    (shape, v)
}

/// A numpy array (any dtype numpy has except complex, object and strings) as a tensor;
/// other values (scalars, lists) go through `numpy.asarray` first.
pub fn from_numpy(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if obj.cast::<numpy::PyUntypedArray>().is_err() {
        let a = obj.py().import("numpy")?.call_method1("asarray", (obj,))?;
        if a.cast::<numpy::PyUntypedArray>().is_ok() {
            return from_numpy(&a);
        }
    }
    macro_rules! try_types {
        ($($t:ty => $ctor:ident),* $(,)?) => {
            $(
                if let Ok(a) = obj.cast::<PyArrayDyn<$t>>() {
                    let (shape, v) = read(a);
                    return Ok(Tensor::$ctor(shape, v));
                }
            )*
        };
    }
    try_types!(
        f32 => from_f32, f64 => from_f64, f16 => from_f16,
        i64 => from_i64, i32 => from_i32, i16 => from_i16, i8 => from_i8,
        u64 => from_u64, u32 => from_u32, u16 => from_u16, u8 => from_u8,
        bool => from_bool,
    );
    let what = obj
        .getattr("dtype")
        .map(|d| d.to_string())
        .unwrap_or_else(|_| obj.get_type().to_string());
    Err(crate::errors::input_err(format!(
        "an array of {what} cannot be a tensor: use a numeric or bool numpy array"
    )))
}
