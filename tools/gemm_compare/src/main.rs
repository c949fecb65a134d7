//! matrixmultiply vs the `gemm` crate, single thread, on im2col GEMM shapes
//! (weights m x k times columns k x n) of MobileNetV2, ResNet18 and SqueezeNet 1.1.
//! Each shape: best of at least 5 calls (the minimum filters out time other processes
//! take on a shared machine); both results are compared.

use std::time::Instant;

/// Best wall time of `reps` calls of `f`, in ms.
fn best(reps: usize, mut f: impl FnMut()) -> f64 {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64() * 1e3
        })
        .fold(f64::MAX, f64::min)
}

fn main() {
    let shapes = [
        (96usize, 16usize, 12544usize),
        (16, 32, 12544),
        (32, 27, 12544),
        (64, 576, 3136),
        (128, 1152, 784),
        (256, 2304, 196),
        (512, 4608, 49),
        (1280, 320, 49),
        (64, 64, 3025),
        (1000, 512, 169),
        (192, 1728, 196),
    ];
    println!("|   m |    k |     n | matrixmultiply | gemm | gemm / matrixmultiply |");
    println!("|---|---|---|---|---|---|");
    for &(m, k, n) in &shapes {
        let a: Vec<f32> = (0..m * k).map(|i| ((i * 7 % 13) as f32 - 6.0) / 7.0).collect();
        let b: Vec<f32> = (0..k * n).map(|i| ((i * 5 % 11) as f32 - 5.0) / 5.0).collect();
        let (mut c1, mut c2) = (vec![0f32; m * n], vec![0f32; m * n]);
        let reps = ((2e8 / (m * k * n) as f64).ceil() as usize).max(5);
        let (ap, bp) = (a.as_ptr(), b.as_ptr());
        let (ks, ns) = (k as isize, n as isize);
        // SAFETY: a is m x k, b is k x n and c m x n, all row-major and contiguous.
        let t1 = best(reps, || unsafe {
            matrixmultiply::sgemm(m, k, n, 1.0, ap, ks, 1, bp, ns, 1, 0.0, c1.as_mut_ptr(), ns, 1)
        });
        // SAFETY: as above (gemm takes column stride, then row stride).
        let t2 = best(reps, || unsafe {
            gemm::gemm(
                m, n, k, c2.as_mut_ptr(), 1, ns, false, ap, 1, ks, bp, 1, ns, 0.0f32, 1.0f32,
                false, false, false, gemm::Parallelism::None,
            )
        });
        let diff = c1.iter().zip(&c2).map(|(x, y)| (x - y).abs()).fold(0f32, f32::max);
        assert!(diff < 1e-3, "results differ by {diff}");
        println!("| {m} | {k} | {n} | {t1:.3} ms | {t2:.3} ms | {:.2} |", t2 / t1);
    }
}
