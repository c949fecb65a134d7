//! Native execution: compile the generated C with the system compiler into a shared
//! library (cached by content hash), load it with libloading, and run nests over
//! 64-byte aligned buffers.

use crate::codegen::emit_c;
use crate::error::{LoopsError, Result};
use crate::ir::*;
use pimkit_ir::{DType, Tensor, TensorData};
use std::alloc::Layout;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// How to build native code.
#[derive(Clone, Debug)]
pub struct NativeOptions {
    /// C compiler (default: `$PIMKIT_CC`, else `cc`).
    pub cc: PathBuf,
    /// Flags; `-O3 -march=native` as the issue asks, no FP contraction so that results
    /// stay reproducible, no errno so that math calls vectorize.
    pub flags: Vec<String>,
    /// Where compiled libraries are cached (default: `$PIMKIT_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/pimkit`, else `~/.cache/pimkit`, else the temp dir).
    pub cache_dir: PathBuf,
}

impl Default for NativeOptions {
    fn default() -> Self {
        let cc = std::env::var_os("PIMKIT_CC")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("cc"));
        let cache_dir = if let Some(d) = std::env::var_os("PIMKIT_CACHE_DIR") {
            PathBuf::from(d)
        } else if let Some(d) = std::env::var_os("XDG_CACHE_HOME") {
            PathBuf::from(d).join("pimkit")
        } else if let Some(h) = std::env::var_os("HOME") {
            PathBuf::from(h).join(".cache").join("pimkit")
        } else {
            std::env::temp_dir().join("pimkit-cache")
        };
        NativeOptions {
            cc,
            flags: [
                "-O3",
                "-march=native",
                "-ffp-contract=off",
                "-fno-math-errno",
                "-fPIC",
                "-shared",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect(),
            cache_dir,
        }
    }
}

type NestFn = unsafe extern "C" fn(*const *mut u8);

/// A loaded native build of a program.
pub struct NativeProgram {
    _lib: libloading::Library,
    fns: Vec<NestFn>,
    /// The shared library on disk.
    pub path: PathBuf,
    /// Milliseconds spent compiling (0 when the cache had it).
    pub compile_ms: f64,
    pub cached: bool,
}

/// FNV-1a, 64 bit, twice with different seeds: a stable content hash for cache names.
fn content_hash(parts: &[&[u8]]) -> String {
    let mut h = [0xcbf29ce484222325u64, 0x84222325cbf29ce4u64];
    for p in parts {
        for &b in *p {
            for x in h.iter_mut() {
                *x ^= b as u64;
                *x = x.wrapping_mul(0x100000001b3);
            }
        }
        for x in h.iter_mut() {
            *x ^= 0xff;
            *x = x.wrapping_mul(0x100000001b3);
        }
    }
    format!("{:016x}{:016x}", h[0], h[1])
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> LoopsError + '_ {
    move |source| LoopsError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Compile (or fetch from the cache) and load a program's native code.
pub fn compile(p: &Program, opts: &NativeOptions) -> Result<NativeProgram> {
    let src = emit_c(p)?;
    let flags = opts.flags.join(" ");
    let hash = content_hash(&[
        src.as_bytes(),
        opts.cc.as_os_str().as_encoded_bytes(),
        flags.as_bytes(),
    ]);
    std::fs::create_dir_all(&opts.cache_dir).map_err(io_err(&opts.cache_dir))?;
    let lib_path = opts.cache_dir.join(format!("pk_{hash}.so"));
    let mut compile_ms = 0.0;
    let cached = lib_path.exists();
    if !cached {
        let uniq = format!(
            "{hash}.{}.{:?}",
            std::process::id(),
            std::thread::current().id()
        )
        .replace(|c: char| !c.is_ascii_alphanumeric() && c != '.', "");
        let c_path = opts.cache_dir.join(format!("pk_{uniq}.c"));
        let tmp_lib = opts.cache_dir.join(format!("pk_{uniq}.so.tmp"));
        std::fs::write(&c_path, &src).map_err(io_err(&c_path))?;
        let t0 = Instant::now();
        let out = Command::new(&opts.cc)
            .args(&opts.flags)
            .arg("-o")
            .arg(&tmp_lib)
            .arg(&c_path)
            .arg("-lm")
            .output()
            .map_err(|source| LoopsError::CompilerMissing {
                cc: opts.cc.clone(),
                source,
            })?;
        compile_ms = t0.elapsed().as_secs_f64() * 1e3;
        if !out.status.success() {
            return Err(LoopsError::CompilerFailed {
                cc: opts.cc.clone(),
                src: c_path,
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        let _ = std::fs::remove_file(&c_path);
        std::fs::rename(&tmp_lib, &lib_path).map_err(io_err(&lib_path))?;
    }
    let load_err = |msg: String| LoopsError::Load {
        path: lib_path.clone(),
        msg,
    };
    // SAFETY: the library is our own generated code with no initializers.
    let lib =
        unsafe { libloading::Library::new(&lib_path) }.map_err(|e| load_err(e.to_string()))?;
    let mut fns = Vec::with_capacity(p.nests.len());
    for n in &p.nests {
        let name = format!("pk_nest_{}", n.id);
        // SAFETY: every pk_nest_<id> has the signature `void (void *const *)`.
        let f: NestFn = unsafe {
            *lib.get::<NestFn>(name.as_bytes())
                .map_err(|e| load_err(format!("{name}: {e}")))?
        };
        fns.push(f);
    }
    Ok(NativeProgram {
        _lib: lib,
        fns,
        path: lib_path,
        compile_ms,
        cached,
    })
}

/// Aligned, zeroed storage for every allocation of a program.
pub struct Buffers {
    ptrs: Vec<*mut u8>,
    layouts: Vec<Layout>,
}

impl Drop for Buffers {
    fn drop(&mut self) {
        for (p, l) in self.ptrs.iter().zip(&self.layouts) {
            // SAFETY: allocated with this layout in `Buffers::new`.
            unsafe { std::alloc::dealloc(*p, *l) };
        }
    }
}

impl Buffers {
    fn new(p: &Program) -> Result<Buffers> {
        // The kernel lets a large allocation succeed and kills the process when its pages
        // are touched: check the whole program's buffers against what is available first.
        let total = p
            .allocs
            .iter()
            .fold(0u64, |t, a| t.saturating_add(a.bytes().max(64) as u64));
        pimkit_ir::memory::check_fits(total, "the native run's buffers (weights, activations)")
            .map_err(LoopsError::Input)?;
        let mut b = Buffers {
            ptrs: vec![],
            layouts: vec![],
        };
        for a in &p.allocs {
            let l = Layout::from_size_align(a.bytes().max(64), 64)
                .map_err(|e| LoopsError::Input(format!("buffer '{}': {e}", a.name)))?;
            // SAFETY: non-zero size.
            let ptr = unsafe { std::alloc::alloc_zeroed(l) };
            if ptr.is_null() {
                return Err(LoopsError::Input(format!(
                    "out of memory allocating {} bytes for buffer '{}'",
                    a.bytes(),
                    a.name
                )));
            }
            b.ptrs.push(ptr);
            b.layouts.push(l);
        }
        Ok(b)
    }
    fn bytes_mut(&mut self, a: AllocId) -> &mut [u8] {
        // SAFETY: the buffer holds layouts[a].size() bytes and we hold &mut self.
        unsafe { std::slice::from_raw_parts_mut(self.ptrs[a], self.layouts[a].size()) }
    }
    fn bytes(&self, a: AllocId) -> &[u8] {
        // SAFETY: as above, shared.
        unsafe { std::slice::from_raw_parts(self.ptrs[a], self.layouts[a].size()) }
    }
}

fn tensor_bytes(t: &Tensor) -> Vec<u8> {
    match &t.data {
        TensorData::F32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::F16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::I64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::I32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::I8(v) => v.iter().map(|&x| x as u8).collect(),
        TensorData::U8(v) => v.clone(),
        TensorData::Bool(v) => v.iter().map(|&x| x as u8).collect(),
        TensorData::F64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::Bf16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::I16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::U16(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::U32(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::U64(v) => v.iter().flat_map(|x| x.to_ne_bytes()).collect(),
        TensorData::Codes(_, v) => v.clone(),
    }
}

/// Deterministic fill for inputs and shape-only weights when no data is given:
/// floats in [-1, 1), integers 0 (safe as indices).
fn pseudo_random(dt: DType, n: usize, seed: u64) -> Vec<u8> {
    let mut s = seed.wrapping_mul(0x9E3779B97F4A7C15) | 1;
    match dt {
        DType::F32 => (0..n)
            .flat_map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                let v = ((s >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0;
                v.to_ne_bytes()
            })
            .collect(),
        _ => vec![0u8; n * dt.size()],
    }
}

/// A program instance: native code plus its buffers.
pub struct Runner<'a> {
    pub prog: &'a Program,
    pub native: &'a NativeProgram,
    bufs: Buffers,
}

impl<'a> Runner<'a> {
    /// Allocate buffers and load the weights (shape-only weights get deterministic data).
    pub fn new(prog: &'a Program, native: &'a NativeProgram) -> Result<Self> {
        let mut r = Runner {
            prog,
            native,
            bufs: Buffers::new(prog)?,
        };
        for (ti, t) in prog.tensors.iter().enumerate() {
            if let (TensorDef::Const { data }, Some(a)) = (&t.def, t.alloc) {
                let bytes = match data {
                    Some(d) => tensor_bytes(d),
                    None => pseudo_random(t.dtype, t.numel(), ti as u64 + 1),
                };
                r.bufs.bytes_mut(a)[..bytes.len()].copy_from_slice(&bytes);
            }
        }
        Ok(r)
    }

    /// Set graph input `i`.
    pub fn set_input(&mut self, i: usize, t: &Tensor) -> Result<()> {
        let tid = *self
            .prog
            .inputs
            .get(i)
            .ok_or_else(|| LoopsError::Input(format!("the program has no input {i}")))?;
        let ti = &self.prog.tensors[tid];
        if t.shape != ti.shape || t.dtype() != ti.dtype {
            return Err(LoopsError::Input(format!(
                "input '{}' must be {}{:?}, got {}{:?}",
                ti.name,
                ti.dtype,
                ti.shape,
                t.dtype(),
                t.shape
            )));
        }
        let a = ti.alloc.expect("inputs are memory");
        let bytes = tensor_bytes(t);
        self.bufs.bytes_mut(a)[..bytes.len()].copy_from_slice(&bytes);
        Ok(())
    }

    /// Fill every graph input with deterministic data (floats in [-1, 1), integers 0).
    pub fn set_inputs_pseudo_random(&mut self, seed: u64) {
        for (i, &tid) in self.prog.inputs.iter().enumerate() {
            let ti = &self.prog.tensors[tid];
            let bytes = pseudo_random(ti.dtype, ti.numel(), seed ^ (i as u64 + 17));
            let a = ti.alloc.expect("inputs are memory");
            self.bufs.bytes_mut(a)[..bytes.len()].copy_from_slice(&bytes);
        }
    }

    /// Run nest `i` once.
    pub fn run_nest(&mut self, i: usize) {
        let f = self.native.fns[i];
        // SAFETY: the nest indexes only within the allocations the lowering sized for it
        // (data-dependent indices are clamped in the generated code).
        unsafe { f(self.bufs.ptrs.as_ptr()) };
    }

    /// Run every nest in order.
    pub fn run_all(&mut self) {
        for i in 0..self.native.fns.len() {
            self.run_nest(i);
        }
    }

    /// Read tensor `t` (any view) back as a dense tensor.
    pub fn read_tensor(&self, t: TensorId) -> Tensor {
        let ti = &self.prog.tensors[t];
        let n = ti.numel();
        let mut flat = Vec::with_capacity(n);
        let mut idx = vec![0usize; ti.shape.len()];
        for _ in 0..n {
            let off = ti.offset
                + idx
                    .iter()
                    .zip(&ti.strides)
                    .map(|(&i, &s)| i as i64 * s)
                    .sum::<i64>();
            flat.push(off as usize);
            for k in (0..idx.len()).rev() {
                idx[k] += 1;
                if idx[k] < ti.shape[k] {
                    break;
                }
                idx[k] = 0;
            }
        }
        let shape = ti.shape.clone();
        if let TensorDef::Scalar(v) = ti.def {
            return Tensor::from_f64_as(ti.dtype, shape, &vec![v; n]);
        }
        let b = self.bufs.bytes(ti.alloc.expect("memory tensor"));
        let sz = ti.dtype.size();
        let get = |o: usize| &b[o * sz..o * sz + sz];
        let data = match ti.dtype {
            DType::F32 => TensorData::F32(
                flat.iter()
                    .map(|&o| f32::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            DType::F16 => TensorData::F16(
                flat.iter()
                    .map(|&o| half::f16::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            DType::I64 => TensorData::I64(
                flat.iter()
                    .map(|&o| i64::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            DType::I32 => TensorData::I32(
                flat.iter()
                    .map(|&o| i32::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            DType::I8 => TensorData::I8(flat.iter().map(|&o| get(o)[0] as i8).collect()),
            DType::U8 => TensorData::U8(flat.iter().map(|&o| get(o)[0]).collect()),
            DType::Bool => TensorData::Bool(flat.iter().map(|&o| get(o)[0] != 0).collect()),
            DType::I16 => TensorData::I16(
                flat.iter()
                    .map(|&o| i16::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            DType::U16 => TensorData::U16(
                flat.iter()
                    .map(|&o| u16::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            DType::U32 => TensorData::U32(
                flat.iter()
                    .map(|&o| u32::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            DType::U64 => TensorData::U64(
                flat.iter()
                    .map(|&o| u64::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            DType::F64 => TensorData::F64(
                flat.iter()
                    .map(|&o| f64::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            DType::Bf16 => TensorData::Bf16(
                flat.iter()
                    .map(|&o| half::bf16::from_ne_bytes(get(o).try_into().unwrap()))
                    .collect(),
            ),
            d => TensorData::Codes(d, flat.iter().map(|&o| get(o)[0]).collect()),
        };
        Tensor { shape, data }
    }

    /// Graph outputs, in order.
    pub fn outputs(&self) -> Vec<Tensor> {
        self.prog
            .outputs
            .iter()
            .map(|&t| self.read_tensor(t))
            .collect()
    }
}

/// Compile and run a program once on the given inputs (graph input order).
pub fn run(p: &Program, inputs: &[Tensor], opts: &NativeOptions) -> Result<Vec<Tensor>> {
    let native = compile(p, opts)?;
    let mut r = Runner::new(p, &native)?;
    if inputs.len() != p.inputs.len() {
        return Err(LoopsError::Input(format!(
            "{} inputs given, the program has {}",
            inputs.len(),
            p.inputs.len()
        )));
    }
    for (i, t) in inputs.iter().enumerate() {
        r.set_input(i, t)?;
    }
    r.run_all();
    Ok(r.outputs())
}
