#![allow(missing_docs)] // criterion_group! generates undocumented items
//! Host timings of the generic kernels, one per precision, on the layer shapes of the
//! real models (g2p-en's 768x256 GRU matrices, netra's 192x64). Run with
//! `cargo bench -p s2s-kernels`; figures and how to read them are in BENCHMARKS.md.
//! The device figures (exact instruction counts under QEMU) come from `s2s qemu`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use s2s_kernels::lut::{sigmoid_q15, softmax_q15, tanh_q15};
use s2s_kernels::{float, Linear, Requant, F32, W8A16, W8F32};

fn matvec(c: &mut Criterion) {
    for (rows, cols) in [(768usize, 256usize), (192, 64)] {
        let n = rows * cols;
        let wf: Vec<f32> = (0..n)
            .map(|i| ((i * 7919) % 1000) as f32 * 1e-3 - 0.5)
            .collect();
        let wi: Vec<i8> = (0..n).map(|i| ((i * 7919) % 255) as i8).collect();
        let xf: Vec<f32> = (0..cols).map(|i| (i as f32 * 0.37).sin()).collect();
        let xi: Vec<i16> = xf.iter().map(|v| (v * 32767.0) as i16).collect();
        let scales = vec![0.01f32; rows];
        let rq = vec![Requant::from_real(0.01); rows];
        let f32l = Linear::<F32>::new(rows, cols, 1, &wf, &[], None).unwrap();
        let w8f = Linear::<W8F32>::new(rows, cols, 1, &wi, &scales, None).unwrap();
        let w8a = Linear::<W8A16>::new(rows, cols, 1, &wi, &rq, None).unwrap();
        let mut of = vec![0.0f32; rows];
        let mut oi = vec![0i32; rows];
        let mut g = c.benchmark_group(format!("linear {rows}x{cols}"));
        g.bench_function("f32", |b| b.iter(|| f32l.apply(&[black_box(&xf)], &mut of)));
        g.bench_function("w8f32", |b| {
            b.iter(|| w8f.apply(&[black_box(&xf)], &mut of))
        });
        g.bench_function("w8a16", |b| {
            b.iter(|| w8a.apply(&[black_box(&xi)], &mut oi))
        });
        g.finish();
    }
}

fn nonlinear(c: &mut Criterion) {
    let xs: Vec<i32> = (0..1024).map(|i| (i - 512) * 512).collect();
    let xf: Vec<f32> = xs.iter().map(|&v| v as f32 / 32768.0).collect();
    let mut g = c.benchmark_group("1024 activations");
    g.bench_function("tanh f32 (libm)", |b| {
        b.iter(|| xf.iter().map(|&x| float::tanh(black_box(x))).sum::<f32>())
    });
    g.bench_function("tanh q15 (table)", |b| {
        b.iter(|| {
            xs.iter()
                .map(|&x| tanh_q15(black_box(x)) as i32)
                .sum::<i32>()
        })
    });
    g.bench_function("sigmoid f32 (libm)", |b| {
        b.iter(|| {
            xf.iter()
                .map(|&x| float::sigmoid(black_box(x)))
                .sum::<f32>()
        })
    });
    g.bench_function("sigmoid q15 (table)", |b| {
        b.iter(|| {
            xs.iter()
                .map(|&x| sigmoid_q15(black_box(x)) as i32)
                .sum::<i32>()
        })
    });
    g.finish();
    let scores: Vec<i32> = (0..25).map(|i| (i * 7919 % 200) * 400).collect();
    let sf: Vec<f32> = scores.iter().map(|&v| v as f32 / 32768.0).collect();
    let mut wq = [0i16; 25];
    let mut wf = [0.0f32; 25];
    let mut g = c.benchmark_group("softmax over 25 positions");
    g.bench_function("f32", |b| {
        b.iter(|| float::softmax(black_box(&sf), &mut wf))
    });
    g.bench_function("q15", |b| {
        b.iter(|| softmax_q15(black_box(&scores), &mut wq))
    });
    g.finish();
}

criterion_group!(benches, matvec, nonlinear);
criterion_main!(benches);
