//! A CPU port of one training step's forward and backward (no optimiser), for tests: the bit-identity
//! of the cache modes says nothing about whether the gradients are right, this does.
//!
//! It rounds to BF16 at the same points as the GPU (x, z, a, g, dz) but accumulates in its own order,
//! so results agree to BF16-level noise, not bit for bit.

use half::bf16;

use super::config::Config;
use super::model::{ParamLayout, RMS_EPS};

fn rb(x: f32) -> f32 {
    bf16::from_f32(x).to_f32()
}

/// ReLU on bits for a BF16-valued f32 (no NaNs here): anything with the sign bit set becomes +0.
fn relu(x: f32) -> f32 {
    if x.is_sign_negative() {
        0.0
    } else {
        x
    }
}

fn rms_scale(x: &[f32]) -> f32 {
    let ss: f32 = x.iter().map(|v| v * v).sum();
    1.0 / (ss / x.len() as f32 + RMS_EPS).sqrt()
}

/// dx += s·(dh − h·mean(dh·h)) for one token.
fn rms_backward(x: &[f32], dh: &[f32], dx: &mut [f32]) {
    let s = rms_scale(x);
    let d = x.len() as f32;
    let dot: f32 = x.iter().zip(dh).map(|(xv, g)| g * xv * s).sum();
    for ((o, xv), g) in dx.iter_mut().zip(x).zip(dh) {
        *o += s * (g - xv * s * dot / d);
    }
}

/// `c[m][n] = Σ_k a[m][k] · b[n][k]` (both row-major with k contiguous).
fn matmul_nt(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for i in 0..m {
        for j in 0..n {
            c[i * n + j] = (0..k).map(|q| a[i * k + q] * b[j * k + q]).sum();
        }
    }
    c
}

/// Transposes an r×c row-major matrix.
fn transpose(a: &[f32], r: usize, c: usize) -> Vec<f32> {
    let mut t = vec![0.0f32; r * c];
    for i in 0..r {
        for j in 0..c {
            t[j * r + i] = a[i * c + j];
        }
    }
    t
}

/// The loss and the gradient of every weight (laid out like the GPU's parameter buffer) for one batch.
pub fn loss_and_grads(
    cfg: &Config,
    vocab: u32,
    lay: &ParamLayout,
    params: &[f32],
    rows: &[u32],
    targets: &[u32],
) -> (f32, Vec<f32>) {
    let (t, d, h, k, v) =
        (cfg.tokens as usize, cfg.d as usize, cfg.hidden() as usize, cfg.context as usize, vocab as usize);
    let slice = |(off, n): (u64, u64)| &params[off as usize..(off + n) as usize];
    let mut grads = vec![0.0f32; params.len()];
    let e = slice(lay.embed);
    let u = slice(lay.unembed);

    // Forward.
    let mut xs = vec![vec![0.0f32; t * d]];
    for ti in 0..t {
        for c in 0..d {
            let s: f32 = (0..k).map(|j| e[rows[ti * k + j] as usize * d + c]).sum();
            xs[0][ti * d + c] = rb(s);
        }
    }
    let norm = |x: &[f32]| -> Vec<f32> {
        let mut out = vec![0.0f32; t * d];
        for ti in 0..t {
            let row = &x[ti * d..(ti + 1) * d];
            let s = rms_scale(row);
            for c in 0..d {
                out[ti * d + c] = row[c] * s;
            }
        }
        out
    };
    let mut rs = Vec::new();
    let mut as_ = Vec::new();
    for l in 0..cfg.layers as usize {
        let hn = norm(&xs[l]);
        let z: Vec<f32> = matmul_nt(&hn, slice(lay.w1[l]), t, h, d).into_iter().map(rb).collect();
        let r: Vec<f32> = z.iter().map(|&x| relu(x)).collect();
        let a: Vec<f32> = r.iter().map(|&x| rb(x * x)).collect();
        let y = matmul_nt(&a, slice(lay.w2[l]), t, d, h);
        let next: Vec<f32> = xs[l].iter().zip(&y).map(|(x, y)| rb(x + y)).collect();
        rs.push(r);
        as_.push(a);
        xs.push(next);
    }
    let last = cfg.layers as usize;
    let hf = norm(&xs[last]);
    let logits = matmul_nt(&hf, u, t, v, d);
    let mut loss = 0.0f32;
    let mut dlogits = vec![0.0f32; t * v];
    for ti in 0..t {
        let row = &logits[ti * v..(ti + 1) * v];
        let mx = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let sum: f32 = row.iter().map(|x| (x - mx).exp()).sum();
        let tg = targets[ti] as usize;
        loss += sum.ln() + mx - row[tg];
        for j in 0..v {
            let p = (row[j] - mx).exp() / sum - if j == tg { 1.0 } else { 0.0 };
            dlogits[ti * v + j] = p / t as f32;
        }
    }
    loss /= t as f32;

    // Backward.
    let put = |g: &mut Vec<f32>, (off, n): (u64, u64), vals: &[f32]| {
        g[off as usize..(off + n) as usize].copy_from_slice(vals)
    };
    // dU = dlogitsᵀ · hf (V×d): rows of dlogitsᵀ against rows of hfᵀ.
    put(&mut grads, lay.unembed, &matmul_nt(&transpose(&dlogits, t, v), &transpose(&hf, t, d), v, d, t));
    let dhf = matmul_nt(&dlogits, &transpose(u, v, d), t, d, v);
    let mut dx = vec![0.0f32; t * d];
    for ti in 0..t {
        rms_backward(&xs[last][ti * d..(ti + 1) * d], &dhf[ti * d..(ti + 1) * d], &mut dx[ti * d..(ti + 1) * d]);
    }
    for l in (0..last).rev() {
        let w2 = slice(lay.w2[l]); // d×H
        let w1 = slice(lay.w1[l]); // H×d
        let g: Vec<f32> = matmul_nt(&dx, &transpose(w2, d, h), t, h, d).into_iter().map(rb).collect();
        let dz: Vec<f32> = rs[l].iter().zip(&g).map(|(r, g)| rb(2.0 * r * g)).collect();
        put(&mut grads, lay.w2[l], &matmul_nt(&transpose(&dx, t, d), &transpose(&as_[l], t, h), d, h, t));
        let hn = norm(&xs[l]);
        put(&mut grads, lay.w1[l], &matmul_nt(&transpose(&dz, t, h), &transpose(&hn, t, d), h, d, t));
        let dh = matmul_nt(&dz, &transpose(w1, h, d), t, d, h);
        for ti in 0..t {
            rms_backward(&xs[l][ti * d..(ti + 1) * d], &dh[ti * d..(ti + 1) * d], &mut dx[ti * d..(ti + 1) * d]);
        }
    }
    let mut de = vec![0.0f32; (lay.embed.1) as usize];
    for ti in 0..t {
        for j in 0..k {
            let row = rows[ti * k + j] as usize;
            for c in 0..d {
                de[row * d + c] += dx[ti * d + c];
            }
        }
    }
    put(&mut grads, lay.embed, &de);
    (loss, grads)
}
