//! The core's CPU-only tests in one binary: the CPU reference codec (`cpu_codec`) and naga validation
//! of the shader variants (`shaders`). No adapter needed; the ordinary libtest harness.

mod cpu_codec;
mod shaders;
mod v2_codec;
