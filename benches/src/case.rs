//! A *case* is one op in one configuration inside a batch (one tensor): it owns its output buffers,
//! records its work, knows the bytes it must move, and checks its result once after timing.
//!
//! Adding an op's rows means writing one constructor in [`make`]'s table (see `fused.rs` for the ops
//! waiting on `bitsparse::fused`); the runner, the timing, the JSON and the plots need no change.

use bitsparse::error::{Error, Result};
use bitsparse::format::{entropy_bound_bits, DType, Layout, Options};
use bitsparse::host::{self, sync};
use bitsparse::{BufferRange, Codec, Compressed, TileOrder};

use super::copy::{CopyKernel, PreparedCopy};
use super::data::Stats;
use super::gpu;
use super::op::Op;

/// What every case of a batch shares: the device, the tensor on the host and on the device.
pub struct BatchCtx<'a> {
    /// Device.
    pub device: &'a wgpu::Device,
    /// Queue.
    pub queue: &'a wgpu::Queue,
    /// The codec.
    pub codec: &'a Codec,
    /// The copy pipeline.
    pub copy: &'a CopyKernel,
    /// Element type.
    pub dtype: DType,
    /// Nominal density.
    pub density: f64,
    /// The dense tensor, little-endian.
    pub data: &'a [u8],
    /// Host-side facts about `data`.
    pub stats: &'a Stats,
    /// `data` on the device (plus the guard word).
    pub input: &'a wgpu::Buffer,
    /// Check results after timing.
    pub verify: bool,
    /// The plain dense kernels, built once per run when first needed.
    pub dense: &'a std::cell::OnceCell<bitsparse::dense_act::DenseAct>,
    /// `BITSPARSE_KERNEL_CONSTANTS` (the plain forward takes its `forward.*` items).
    pub kernel_constants: Option<&'a str>,
    /// Inputs of the fused and plain kernels, made once per batch when first needed.
    pub fused: std::cell::OnceCell<super::fused::FusedInputs>,
}

impl BatchCtx<'_> {
    /// Elements.
    pub fn n(&self) -> u64 {
        self.stats.n
    }

    /// Dense bytes.
    pub fn dense_bytes(&self) -> u64 {
        self.data.len() as u64
    }
}

/// What a case's check found.
#[derive(Clone, Debug, Default)]
pub struct Check {
    /// Dense bytes ÷ stored bytes (codec rows).
    pub ratio: Option<f64>,
    /// Entropy bound bits ÷ achieved bits (codec rows).
    pub bound_fraction: Option<f64>,
    /// Something the report should say (a mismatch, a skipped check).
    pub note: Option<String>,
}

/// One timed thing.
pub trait Case {
    /// The op.
    fn op(&self) -> Op;
    /// Sign packing (false for ops it does not apply to).
    fn sign_pack(&self) -> bool;
    /// How the tiles claim their place (compress and fused-forward rows; `None` elsewhere).
    fn tile_order(&self) -> Option<TileOrder> {
        None
    }
    /// Whether a fused backward also writes the dense `a` for dW₂ (`None` on other rows).
    fn with_a(&self) -> Option<bool> {
        None
    }
    /// The stream format a codec row reads or writes (`None` on other rows).
    fn format_version(&self) -> Option<u32> {
        matches!(self.op(), Op::Compress | Op::Decompress).then_some(1)
    }
    /// Bytes that must move (docs/CONVENTIONS.md).
    fn bytes_moved(&self) -> u64;
    /// Buffers the case writes or reads besides the batch input (for the fence).
    fn buffers(&self) -> Vec<&wgpu::Buffer>;
    /// Records what must precede each repetition but is not part of the op (an arena reset), before the
    /// fence and outside the timed region.
    fn before(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        let _ = encoder;
        Ok(())
    }
    /// Records the work (nothing is submitted).
    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()>;
    /// Checks the result after timing (may submit and read back).
    fn check(&self, ctx: &BatchCtx<'_>) -> Result<Check>;
}

/// The cases of `op` with `sign_pack` for this batch: one per tile order in `orders` for compress and
/// the fused forward, without and with `a` for the fused backward, one otherwise; none where the op has
/// no implementation (yet) or does not apply to the batch's dtype.
pub fn make<'a>(op: Op, sign_pack: bool, orders: &[TileOrder], ctx: &BatchCtx<'a>) -> Result<Vec<Box<dyn Case + 'a>>> {
    let mut out: Vec<Box<dyn Case + 'a>> = Vec::new();
    match op {
        Op::Copy => out.push(Box::new(CopyCase::new(ctx)?)),
        Op::Compress => {
            for &order in orders {
                out.push(Box::new(CompressCase::new(ctx, sign_pack, order)?));
            }
            out.push(Box::new(CompressV2Case::new(ctx, sign_pack)?));
        }
        Op::Decompress => {
            out.push(Box::new(DecompressCase::new(ctx, sign_pack)?));
            out.push(Box::new(DecompressV2Case::new(ctx, sign_pack)?));
        }
        Op::FusedForward => {
            for &order in orders {
                out.extend(super::fused::fused_forward(ctx, sign_pack, order)?);
            }
        }
        Op::FusedBackward => {
            for with_a in [false, true] {
                out.extend(super::fused::fused_backward(ctx, sign_pack, with_a)?);
            }
        }
        Op::PlainForward => out.extend(super::fused::plain_forward(ctx)?),
        Op::PlainBackward => out.extend(super::fused::plain_backward(ctx)?),
    }
    Ok(out)
}

/// Whether `op` has an implementation at all (so the report can say which rows are missing and why).
pub fn implemented(op: Op) -> bool {
    match op {
        Op::Copy | Op::Compress | Op::Decompress => true,
        Op::FusedForward | Op::FusedBackward | Op::PlainForward | Op::PlainBackward => super::fused::implemented(op),
    }
}

/// The copy shader over the batch's dense bytes.
struct CopyCase<'a> {
    kernel: &'a CopyKernel,
    dst: wgpu::Buffer,
    prepared: PreparedCopy,
}

impl<'a> CopyCase<'a> {
    fn new(ctx: &BatchCtx<'a>) -> Result<Self> {
        let dst = gpu::buffer(ctx.device, "bitsparse.bench.copy.dst", ctx.dense_bytes())?;
        let prepared = ctx.copy.prepare(ctx.device, ctx.input, &dst, ctx.dense_bytes())?;
        Ok(CopyCase { kernel: ctx.copy, dst, prepared })
    }
}

impl Case for CopyCase<'_> {
    fn op(&self) -> Op {
        Op::Copy
    }
    fn sign_pack(&self) -> bool {
        false
    }
    fn bytes_moved(&self) -> u64 {
        2 * self.prepared.bytes
    }
    fn buffers(&self) -> Vec<&wgpu::Buffer> {
        vec![&self.dst]
    }
    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        self.kernel.record(encoder, &self.prepared);
        Ok(())
    }
    fn check(&self, ctx: &BatchCtx<'_>) -> Result<Check> {
        if !ctx.verify {
            return Ok(Check::default());
        }
        let back = sync::read_buffer(ctx.device, ctx.queue, &self.dst, 0, ctx.dense_bytes())?;
        let note =
            (back != ctx.data).then(|| format!("copy {} {} elements: output differs from input", ctx.dtype, ctx.n()));
        Ok(Check { note, ..Default::default() })
    }
}

/// Ratio and bound fraction of a stream of `value_words` value words.
pub(super) fn codec_check(ctx: &BatchCtx<'_>, layout: &Layout, value_words: u64, note: Option<String>) -> Check {
    let stored = layout.compact_bytes(value_words) as f64;
    let achieved_bits = stored * 8.0 / ctx.n() as f64;
    let bound = entropy_bound_bits(ctx.stats.measured_density, ctx.dtype, layout.options.sign_pack);
    Check { ratio: Some(ctx.dense_bytes() as f64 / stored), bound_fraction: Some(bound / achieved_bits), note }
}

/// The value words of the stream in `c`: from its header (read once, after the timed reps), compared
/// with the count the host expects from the data. A chunked stream's header counts the gaps between
/// chunks, so there the host's count is the stored size.
fn stored_value_words(ctx: &BatchCtx<'_>, c: &Compressed) -> Result<(u64, Option<String>)> {
    let expected = ctx.stats.value_words(ctx.dtype, c.layout.options);
    let h = host::read_header(ctx.device, ctx.queue, c)?;
    host::check_status(&h, &c.layout)?;
    match c.placement {
        bitsparse::Placement::Compact if h.value_words as u64 != expected => Ok((
            h.value_words as u64,
            Some(format!(
                "{} {} ρ={} n={}: header says {} value words, the data need {expected}",
                ctx.dtype,
                if c.layout.options.sign_pack { "sign-packed" } else { "unpacked" },
                ctx.density,
                ctx.n(),
                h.value_words
            )),
        )),
        bitsparse::Placement::Compact => Ok((h.value_words as u64, None)),
        bitsparse::Placement::Chunked { .. } => Ok((expected, None)),
    }
}

fn options(sign_pack: bool) -> Options {
    Options { sign_pack }
}

/// A compress of the batch tensor into a stream buffer of worst-case capacity.
struct CompressJob<'a> {
    codec: &'a Codec,
    input: &'a wgpu::Buffer,
    dtype: DType,
    n: u64,
    options: Options,
    order: TileOrder,
    out: wgpu::Buffer,
    cap: u64,
}

impl<'a> CompressJob<'a> {
    fn new(ctx: &BatchCtx<'a>, sign_pack: bool, order: TileOrder) -> Result<Self> {
        let options = options(sign_pack);
        let cap = ctx.codec.output_capacity(ctx.dtype, ctx.n(), options)?;
        let out = gpu::buffer(ctx.device, "bitsparse.bench.stream", cap)?;
        Ok(CompressJob { codec: ctx.codec, input: ctx.input, dtype: ctx.dtype, n: ctx.n(), options, order, out, cap })
    }

    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<Compressed> {
        let input = BufferRange::new(self.input, 0, self.n * self.dtype.bytes());
        let out = BufferRange::new(&self.out, 0, self.cap);
        self.codec.compress_with_order(encoder, input, self.dtype, self.n, self.options, self.order, out)
    }
}

/// Codec compress of the batch tensor.
struct CompressCase<'a> {
    job: CompressJob<'a>,
    layout: Layout,
    bytes: u64,
    last: std::cell::RefCell<Option<Compressed>>,
}

impl<'a> CompressCase<'a> {
    fn new(ctx: &BatchCtx<'a>, sign_pack: bool, order: TileOrder) -> Result<Self> {
        let job = CompressJob::new(ctx, sign_pack, order)?;
        let layout = Layout::new(ctx.dtype, ctx.n(), options(sign_pack))?;
        let bytes = ctx.dense_bytes() + ctx.stats.mask_and_values_bytes(&layout);
        Ok(CompressCase { job, layout, bytes, last: std::cell::RefCell::new(None) })
    }
}

impl Case for CompressCase<'_> {
    fn op(&self) -> Op {
        Op::Compress
    }
    fn sign_pack(&self) -> bool {
        self.job.options.sign_pack
    }
    fn tile_order(&self) -> Option<TileOrder> {
        Some(self.job.order)
    }
    fn bytes_moved(&self) -> u64 {
        self.bytes
    }
    fn buffers(&self) -> Vec<&wgpu::Buffer> {
        vec![&self.job.out]
    }
    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        let c = self.job.record(encoder)?;
        *self.last.borrow_mut() = Some(c);
        Ok(())
    }
    fn check(&self, ctx: &BatchCtx<'_>) -> Result<Check> {
        let c = self
            .last
            .borrow()
            .clone()
            .ok_or_else(|| Error::InvalidArgument("compress case checked before it ran".into()))?;
        let (words, mut note) = stored_value_words(ctx, &c)?;
        // The stream itself, decoded where it lies (an unordered one's tiles out of order): bit-exact?
        if ctx.verify && note.is_none() {
            let out = gpu::buffer(ctx.device, "bitsparse.bench.verify", ctx.dense_bytes())?;
            let mut enc = ctx
                .device
                .create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.bench.verify") });
            self.job.codec.decompress(&mut enc, &c, BufferRange::new(&out, 0, ctx.dense_bytes()))?;
            sync::submit(ctx.queue, [enc.finish()]);
            if sync::read_buffer(ctx.device, ctx.queue, &out, 0, ctx.dense_bytes())? != ctx.data {
                note = Some(format!(
                    "compress {} {} ρ={} n={}: its stream does NOT decode to the input",
                    ctx.dtype,
                    self.job.order.name(),
                    ctx.density,
                    ctx.n()
                ));
            }
        }
        Ok(codec_check(ctx, &self.layout, words, note))
    }
}

/// GPU compress of the batch's tensor into format version 2 (`Codec::compress_v2`: tiles claim their
/// words with one atomic each, so `tile_order` is unordered), into a stream buffer of worst-case
/// capacity. The stream's size comes from one untimed compress when the case is made.
struct CompressV2Case<'a> {
    codec: &'a Codec,
    input: &'a wgpu::Buffer,
    dtype: DType,
    n: u64,
    options: Options,
    layout: bitsparse::format::v2::LayoutV2,
    out: wgpu::Buffer,
    cap: u64,
    stream_bytes: u64,
}

impl<'a> CompressV2Case<'a> {
    fn new(ctx: &BatchCtx<'a>, sign_pack: bool) -> Result<Self> {
        let options = options(sign_pack);
        let layout = bitsparse::format::v2::LayoutV2::new(ctx.dtype, ctx.n(), options, true)?;
        let cap = layout.capacity_bytes();
        // Plus the guard word the fence clears (`gpu::fence`), outside the bound range.
        let out = gpu::buffer(ctx.device, "bitsparse.bench.stream_v2", cap + 4)?;
        let mut case = CompressV2Case {
            codec: ctx.codec,
            input: ctx.input,
            dtype: ctx.dtype,
            n: ctx.n(),
            options,
            layout,
            out,
            cap,
            stream_bytes: 0,
        };
        let mut enc =
            ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.bench.setup") });
        case.record(&mut enc)?;
        sync::submit(ctx.queue, [enc.finish()]);
        case.stream_bytes = case.written(ctx)?.0;
        Ok(case)
    }

    /// The stream's bytes (from its header's `DATA_WORDS`) and its status word.
    fn written(&self, ctx: &BatchCtx<'_>) -> Result<(u64, u32)> {
        let head = sync::read_buffer(ctx.device, ctx.queue, &self.out, 0, 32)?;
        let word = |i: usize| u32::from_le_bytes([head[4 * i], head[4 * i + 1], head[4 * i + 2], head[4 * i + 3]]);
        Ok((self.layout.stream_bytes(word(4) as u64), word(5)))
    }
}

impl Case for CompressV2Case<'_> {
    fn op(&self) -> Op {
        Op::Compress
    }
    fn sign_pack(&self) -> bool {
        self.options.sign_pack
    }
    fn tile_order(&self) -> Option<TileOrder> {
        Some(TileOrder::Unordered)
    }
    fn format_version(&self) -> Option<u32> {
        Some(2)
    }
    /// The dense tensor read and the version-2 stream written.
    fn bytes_moved(&self) -> u64 {
        self.n * self.dtype.bytes() + self.stream_bytes
    }
    fn buffers(&self) -> Vec<&wgpu::Buffer> {
        vec![&self.out]
    }
    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        let input = BufferRange::new(self.input, 0, self.n * self.dtype.bytes());
        self.codec.compress_v2(
            encoder,
            input,
            self.dtype,
            self.n,
            self.options,
            BufferRange::new(&self.out, 0, self.cap),
        )?;
        Ok(())
    }
    fn check(&self, ctx: &BatchCtx<'_>) -> Result<Check> {
        let (stream_bytes, status) = self.written(ctx)?;
        let what = format!(
            "compress v2 {} {} ρ={} n={}",
            ctx.dtype,
            if self.options.sign_pack { "sign-packed" } else { "unpacked" },
            ctx.density,
            ctx.n()
        );
        let mut note = (stream_bytes != self.stream_bytes || status != 0).then(|| {
            format!(
                "{what}: the timed stream has {stream_bytes} bytes and status {status}, the first {}",
                self.stream_bytes
            )
        });
        // The stream itself (tile starts, any tile order), validated and decoded: bit-exact?
        if ctx.verify && note.is_none() {
            let stream = sync::read_buffer(ctx.device, ctx.queue, &self.out, 0, stream_bytes)?;
            match host::decompress_to_vec(self.codec, ctx.device, ctx.queue, &stream) {
                Ok(back) if back == ctx.data => {}
                Ok(_) => note = Some(format!("{what}: its stream does NOT decode to the input")),
                Err(e) => note = Some(format!("{what}: its stream does not decode: {e}")),
            }
        }
        let stored = stream_bytes as f64;
        let bound = entropy_bound_bits(ctx.stats.measured_density, ctx.dtype, self.options.sign_pack);
        Ok(Check {
            ratio: Some(ctx.dense_bytes() as f64 / stored),
            bound_fraction: Some(bound * ctx.n() as f64 / (stored * 8.0)),
            note,
        })
    }
}

/// Codec decompress of a stream compressed once, untimed, when the case is made.
struct DecompressCase<'a> {
    codec: &'a Codec,
    stream: Compressed,
    out: wgpu::Buffer,
    dense: u64,
    bytes: u64,
}

/// The batch's tensor compressed once on the GPU (ordered), untimed: the input of the decompress rows.
fn compress_once(ctx: &BatchCtx<'_>, sign_pack: bool) -> Result<Compressed> {
    let job = CompressJob::new(ctx, sign_pack, TileOrder::Ordered)?;
    let mut enc =
        ctx.device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("bitsparse.bench.setup") });
    let stream = job.record(&mut enc)?;
    sync::submit(ctx.queue, [enc.finish()]);
    Ok(stream)
}

/// After timing, with `ctx.verify`: the note a decompress row gets when `out` does not hold the input.
fn decoded_mismatch(ctx: &BatchCtx<'_>, what: &str, sign_pack: bool, out: &wgpu::Buffer) -> Result<Option<String>> {
    if !ctx.verify {
        return Ok(None);
    }
    let back = sync::read_buffer(ctx.device, ctx.queue, out, 0, ctx.dense_bytes())?;
    Ok((back != ctx.data).then(|| {
        let first = back.iter().zip(ctx.data).position(|(a, b)| a != b).unwrap_or(0) as u64 / ctx.dtype.bytes();
        format!(
            "{what} {} {} ρ={} n={}: NOT bit-exact (first difference at element {first})",
            ctx.dtype,
            if sign_pack { "sign-packed" } else { "unpacked" },
            ctx.density,
            ctx.n()
        )
    }))
}

impl<'a> DecompressCase<'a> {
    fn new(ctx: &BatchCtx<'a>, sign_pack: bool) -> Result<Self> {
        let stream = compress_once(ctx, sign_pack)?;
        let out = gpu::buffer(ctx.device, "bitsparse.bench.decompressed", ctx.dense_bytes())?;
        let bytes = ctx.dense_bytes() + ctx.stats.mask_and_values_bytes(&stream.layout);
        Ok(DecompressCase { codec: ctx.codec, stream, out, dense: ctx.dense_bytes(), bytes })
    }
}

impl Case for DecompressCase<'_> {
    fn op(&self) -> Op {
        Op::Decompress
    }
    fn sign_pack(&self) -> bool {
        self.stream.layout.options.sign_pack
    }
    fn bytes_moved(&self) -> u64 {
        self.bytes
    }
    fn buffers(&self) -> Vec<&wgpu::Buffer> {
        vec![&self.stream.buffer, &self.out]
    }
    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        self.codec.decompress(encoder, &self.stream, BufferRange::new(&self.out, 0, self.dense))
    }
    fn check(&self, ctx: &BatchCtx<'_>) -> Result<Check> {
        let (words, note) = stored_value_words(ctx, &self.stream)?;
        let mismatch = decoded_mismatch(ctx, "decompress", self.sign_pack(), &self.out)?;
        let note = match (note, mismatch) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        Ok(codec_check(ctx, &self.stream.layout, words, note))
    }
}

/// GPU decompress of the format-version-2 stream of the batch's tensor (`Codec::decompress_v2`): the
/// canonical stream (`host::compress_v2_to_vec`: the GPU writer, the tiles laid out by the host) made
/// once when the case is made, uploaded, then decoded in every timed repetition.
struct DecompressV2Case<'a> {
    codec: &'a Codec,
    layout: bitsparse::format::v2::LayoutV2,
    stream: wgpu::Buffer,
    stream_bytes: u64,
    out: wgpu::Buffer,
    dense: u64,
    sign_pack: bool,
}

impl<'a> DecompressV2Case<'a> {
    fn new(ctx: &BatchCtx<'a>, sign_pack: bool) -> Result<Self> {
        let v2 = host::compress_v2_to_vec(ctx.codec, ctx.device, ctx.queue, ctx.data, ctx.dtype, options(sign_pack))?;
        let info = bitsparse::format::StreamInfo::from_bytes(&v2)?;
        let layout = bitsparse::format::v2::LayoutV2::new(info.dtype, info.n, info.options, false)?;
        let mut padded = v2;
        let stream_bytes = padded.len() as u64;
        // Whole words, plus the guard word the fence clears (`gpu::fence`), outside the bound range.
        padded.resize(padded.len().div_ceil(4) * 4 + 4, 0);
        let stream = {
            use wgpu::util::DeviceExt;
            ctx.device.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("bitsparse.bench.stream_v2"),
                contents: &padded,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::COPY_SRC,
            })
        };
        let out = gpu::buffer(ctx.device, "bitsparse.bench.decompressed_v2", ctx.dense_bytes())?;
        Ok(DecompressV2Case {
            codec: ctx.codec,
            layout,
            stream,
            stream_bytes,
            out,
            dense: ctx.dense_bytes(),
            sign_pack,
        })
    }
}

impl Case for DecompressV2Case<'_> {
    fn op(&self) -> Op {
        Op::Decompress
    }
    fn sign_pack(&self) -> bool {
        self.sign_pack
    }
    fn format_version(&self) -> Option<u32> {
        Some(2)
    }
    /// The version-2 stream read and the dense tensor written.
    fn bytes_moved(&self) -> u64 {
        self.stream_bytes + self.dense
    }
    fn buffers(&self) -> Vec<&wgpu::Buffer> {
        vec![&self.stream, &self.out]
    }
    fn record(&self, encoder: &mut wgpu::CommandEncoder) -> Result<()> {
        self.codec.decompress_v2(
            encoder,
            &self.layout,
            BufferRange::new(&self.stream, 0, self.stream_bytes.div_ceil(4) * 4),
            BufferRange::new(&self.out, 0, self.dense),
        )
    }
    fn check(&self, ctx: &BatchCtx<'_>) -> Result<Check> {
        let note = decoded_mismatch(ctx, "decompress v2", self.sign_pack, &self.out)?;
        let stored = self.stream_bytes as f64;
        let bound = entropy_bound_bits(ctx.stats.measured_density, ctx.dtype, self.sign_pack);
        Ok(Check {
            ratio: Some(ctx.dense_bytes() as f64 / stored),
            bound_fraction: Some(bound * ctx.n() as f64 / (stored * 8.0)),
            note,
        })
    }
}
